#!/usr/bin/env bash
# Create a second virtual environment that runs this package under lm-eval's 0.5 line.
#
# The main environment pins lm-eval 0.4.13, the release users have today; this one holds the
# pre-release of the next line (its public Scorer pipeline), for tests_lm_eval_next/.
#
# usage: scripts/install-lm-eval-next-env.sh [VENV_DIR]      (default: .venv-lm-eval-next)
#   TORCH_SPEC   torch requirement (default torch==2.13.0, the CPU-friendly pin)
#   PYTHON       interpreter that creates the venv (default python3)
#   CONSTRAINTS  pip constraints file (default constraints/lm-eval-next.txt: the main
#                environment's versions with lm-eval 0.5.0.dev1; CONSTRAINTS= resolves the newest)
set -euo pipefail
VENV=${1:-.venv-lm-eval-next}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
CONSTRAINTS=${CONSTRAINTS-$HERE/constraints/lm-eval-next.txt}
PIN=()
if [[ -n $CONSTRAINTS ]]; then
    PIN=(-c "$CONSTRAINTS")
fi

"$PY" -m venv "$VENV"
"$VENV/bin/python" -m pip install --quiet "${PIN[@]}" --pre "$TORCH_SPEC" \
    -e "$HERE[test]" 'lm-eval[api]>=0.5.0.dev1,<0.6'
"$VENV/bin/python" -m compileall -q "$HERE/aqua_tasks" "$HERE/orca_judge" "$HERE/eval_plugins" \
    "$HERE/eval_common" >/dev/null
echo "lm-eval next environment ready: $("$VENV/bin/python" -c 'import lm_eval; print(lm_eval.__version__)')"
