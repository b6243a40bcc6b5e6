#!/usr/bin/env bash
# Show that installing aqua-bench-eval does not change the outcome of lm-eval's OWN test suite.
#
# Runs the given lm-eval test files twice with the same interpreter and offline Hugging Face
# settings: once with our start-up hook on (AQUA_LM_EVAL_HOOK unset) and once with it off
# (AQUA_LM_EVAL_HOOK=0, lm-eval exactly as without this package). Each run writes a junit xml;
# the two are then compared test by test (passed / failed / skipped / error). Tests that fail in
# both modes (e.g. because they need the Hub) count as "same outcome".
#
# usage: scripts/compare-lm-eval-own-tests.sh LM_EVAL_EXPORT OUT_DIR TEST_FILE...
#   LM_EVAL_EXPORT  folder holding lm-eval's exported `tests/` (the tests folder itself works too),
#                   e.g. in a clone of lm-eval: git archive REV tests pyproject.toml | tar -x -C DIR
#   OUT_DIR         where hook_on.xml, hook_off.xml, *.log and summary.json go (created)
#   TEST_FILE       paths relative to LM_EVAL_EXPORT, e.g. tests/test_utils.py tests/test_metrics.py
# environment:
#   PYTHON        interpreter with lm-eval and this package installed (default: .venv/bin/python)
#   PYTEST_ARGS   extra pytest arguments (default: "-n 2")
#   TIMEOUT       seconds allowed per mode (default 900)
#   SOURCE        label for where the tests came from (tag or commit), copied into summary.json
# exit status: 0 when every test has the same outcome in both modes, 1 otherwise.
set -euo pipefail
repo=$(cd "$(dirname "$0")/.." && pwd)
if (($# < 3)); then
    sed -n '2,20p' "$0" | sed 's/^# \{0,1\}//'
    exit 2
fi
root=$(cd "$1" && pwd)
[[ $(basename "$root") == tests && ! -d $root/tests ]] && root=$(dirname "$root")
mkdir -p "$2"
out=$(cd "$2" && pwd)
shift 2
PYTHON=${PYTHON:-$repo/.venv/bin/python}
read -r -a pytest_args <<<"${PYTEST_ARGS:--n 2}"
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TRANSFORMERS_OFFLINE=1

run_mode() { # $1: hook_on | hook_off
    local mode=$1 start rc=0
    shift
    local -a env_cmd=(env -u AQUA_LM_EVAL_HOOK)
    [[ $mode == hook_off ]] && env_cmd=(env AQUA_LM_EVAL_HOOK=0)
    # Record whether the hook really sits on sys.meta_path in this mode.
    (cd "$root" && "${env_cmd[@]}" "$PYTHON" -c \
        'import sys; print(any(type(f).__name__ == "LmEvalImportHook" for f in sys.meta_path))') \
        >"$out/$mode.hook_active"
    start=$(date +%s)
    (cd "$root" && "${env_cmd[@]}" timeout "${TIMEOUT:-900}" "$PYTHON" -m pytest \
        -p no:cacheprovider -q -rA "${pytest_args[@]}" --junitxml="$out/$mode.xml" "$@") \
        >"$out/$mode.log" 2>&1 || rc=$?
    echo "$(($(date +%s) - start))" >"$out/$mode.wall_s"
    echo "$mode: pytest exit $rc, $(tail -n 1 "$out/$mode.log")"
}
run_mode hook_on "$@"
run_mode hook_off "$@"

SOURCE=${SOURCE:-unknown} "$PYTHON" - "$out" "$@" <<'EOF'
import json, sys, xml.etree.ElementTree as ET
from importlib.metadata import version
from pathlib import Path

out, files = Path(sys.argv[1]), sys.argv[2:]
KINDS = ("passed", "failed", "skipped", "error")

def outcomes(mode):
    """{test id: (outcome, first line of its message)} from one junit xml."""
    result = {}
    for case in ET.parse(out / f"{mode}.xml").getroot().iter("testcase"):
        test = f"{case.get('classname')}::{case.get('name')}"
        found = [(t, c.get("message") or "") for c in case for t in ("failure", "error", "skipped")
                 if c.tag == t]
        kinds = {"failure": "failed", "error": "error", "skipped": "skipped"}
        kind = "+".join(sorted({kinds[t] for t, _ in found})) or "passed"
        result[test] = (kind, (found[0][1].strip().splitlines() or [""])[0][:200] if found else "")
    return result

on, off = outcomes("hook_on"), outcomes("hook_off")
tests = sorted(on.keys() | off.keys())
missing = ("missing", "")
diffs = [{"test": t, "hook_on": on.get(t, missing)[0], "hook_off": off.get(t, missing)[0],
          "hook_on_message": on.get(t, missing)[1]}
         for t in tests if on.get(t, missing)[0] != off.get(t, missing)[0]]
count = lambda res: {k: sum(v[0].split("+")[0] == k for v in res.values()) for k in KINDS}
summary = {
    "lm_eval_version": version("lm_eval"), "source": __import__("os").environ["SOURCE"],
    "files": files, "tests": len(tests), "same_outcome": len(tests) - len(diffs),
    "differences": diffs, "hook_on": count(on), "hook_off": count(off),
    "hook_active": {m: (out / f"{m}.hook_active").read_text().strip() == "True"
                    for m in ("hook_on", "hook_off")},
    "wall_s": {m: int((out / f"{m}.wall_s").read_text()) for m in ("hook_on", "hook_off")},
}
(out / "summary.json").write_text(json.dumps(summary, indent=2) + "\n")
print(f"\n{'':10}" + "".join(f"{k:>9}" for k in KINDS) + f"{'wall_s':>9}{'hook':>7}")
for m in ("hook_on", "hook_off"):
    print(f"{m:10}" + "".join(f"{summary[m][k]:9}" for k in KINDS)
          + f"{summary['wall_s'][m]:9}{str(summary['hook_active'][m]):>7}")
print(f"\n{len(tests)} tests, {summary['same_outcome']} with the same outcome, {len(diffs)} differ")
for d in diffs:
    print(f"  {d['test']}: hook on {d['hook_on']}, hook off {d['hook_off']}  {d['hook_on_message']}")
print(f"summary: {out / 'summary.json'}")
sys.exit(1 if diffs else 0)
EOF
