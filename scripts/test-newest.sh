#!/usr/bin/env bash
# Run the test suite against the newest releases of every dependency, not the pinned ones.
#
# The README's commands and CI install the versions in constraints/main.txt, the set the suite
# last passed with, so an upstream release cannot turn CI red for an unrelated change. This
# script shows how the suite fares on what pip resolves today: a failure here is a known
# upstream change to fix deliberately, then pin with --write-constraints.
#
# usage: scripts/test-newest.sh [--write-constraints] [PYTEST_ARGS...]
#   --write-constraints  when the suite passes, write the resolved versions to constraints/main.txt
#   VENV                 the environment to create (default .venv-newest; replaced if present)
#   TORCH_SPEC           torch requirement (default torch==2.13.0, the CPU build; see README)
set -euo pipefail
cd "$(dirname "$0")/.."
write=0
if [[ ${1:-} == --write-constraints ]]; then
    write=1
    shift
fi
VENV=${VENV:-.venv-newest}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}

rm -rf "$VENV"
python3 -m venv "$VENV"
"$VENV/bin/pip" install --quiet "$TORCH_SPEC" -e '.[test]'
"$VENV/bin/pip" freeze --exclude-editable | sed 's/+cpu$//' >"$VENV/resolved.txt"
echo "versions that differ from constraints/main.txt (pinned -> newest):"
diff <(sort constraints/main.txt) <(sort "$VENV/resolved.txt") | grep '^[<>]' || echo "  none"
"$VENV/bin/python" -m pytest -q "$@"
if ((write)); then
    cp "$VENV/resolved.txt" constraints/main.txt
    echo "constraints/main.txt updated: commit it with the change that needed it"
fi
