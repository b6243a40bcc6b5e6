#!/usr/bin/env bash
# The two ORCA seed tables, one training run at a time, each run's row committed as it ends:
# the recommended recipe (curriculum-synthetic.yaml), then the same recipe with the abstention
# kinds (curriculum-synthetic-abstention.yaml), split seed 0 before split seed 1. After each
# abstention run, `aqua open-judge-check` on its judge (is it fit for open-ended AQUA at this
# seed?) is written to benchmarks/results/open_judge_check/; once a split's three seeds are
# trained, `orca ensemble` of them is scored on its held-out part into
# benchmarks/results/orca_ensemble/ (the three seeds, their mixture and the written folder);
# a seed whose row was kept from an earlier sitting but whose run folder is gone is trained
# again for it (training is deterministic on one machine: the same judge, its row kept).
# Every step resumes where it stopped (benchmarks/orca_seed_table.py; a check or ensemble
# already written is not run again), so start it again at each sitting:
#
#   nohup nice -n 19 benchmarks/seed_tables.sh > runs/seed-tables.log 2>&1 &
#
# and commit benchmarks/results/ after each finished run. Needs the human ratings in
# data/orca-human (orca fetch-ratings), the backbone in models/$BACKBONE (`orca backbone NAME --output models/NAME`;
# default smollm2-135m, or gemma-3-270m: its tables, runs and checks carry the backbone's name)
# and, for the check, the released AQUA files in $AQUA_DATA (default ../shared/data/aqua-bench).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
AQUA_DATA=${AQUA_DATA:-../shared/data/aqua-bench}
BACKBONE=${BACKBONE:-smollm2-135m}
# The SmolLM2 tables came first and keep their plain names.
TAG=$([ "$BACKBONE" = smollm2-135m ] || echo "-$BACKBONE")
[ -f "models/$BACKBONE/config.json" ] || { echo "models/$BACKBONE: no backbone there (orca backbone $BACKBONE --output models/$BACKBONE)" >&2; exit 2; }
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}
# Before an hour of training, not after it.
[ -d "$AQUA_DATA" ] || { echo "AQUA_DATA=$AQUA_DATA: no such folder (the released AQUA files)" >&2; exit 2; }

table() {  # table RECIPE OUT RESULTS --seeds ... --split-seeds ... (RESULTS "": no merge)
  local config=$1 out=$2 results=$3
  shift 3
  "$PY" benchmarks/orca_seed_table.py --config "configs/orca/$config" --data-dir data/orca-human \
    --backbone "models/$BACKBONE" --out "$out" ${results:+--results "$results"} "$@"
}

open_check() {  # open_check SPLIT SEED: the check on that abstention run's judge, as JSON
  local run=runs/seed-table-abstention$TAG/split-$1-seed-$2
  local result=benchmarks/results/open_judge_check/abstention$TAG-split-$1-seed-$2.json status=0
  # The check is the run's: it holds the run's recipe and is run again when that changed.
  "$PY" - "$run.json" "$result" <<'PY' && return 0
import json, os, sys
if not os.path.exists(sys.argv[1]):
    # A row from an earlier sitting, its run folder gone: nothing to check, and said so.
    if not os.path.exists(sys.argv[2]):
        print(f"{sys.argv[1]}: no run record here; open check not run", file=sys.stderr)
    sys.exit(0)
try:
    record, kept = (json.load(open(path)) for path in sys.argv[1:])
    sys.exit(0 if kept.get("recipe") == record["recipe"] else 1)
except (OSError, ValueError, KeyError, AttributeError):
    sys.exit(1)
PY
  mkdir -p "$(dirname "$result")"
  "$PY" -m eval_plugins.cli.main open-judge-check --checkpoint "$run" --data-dir "$AQUA_DATA" \
    --human-items data/orca-human/dev.jsonl --device cpu --json > "$result.tmp" || status=$?
  # 0 fit, 1 not fit: both are the figures when the JSON says the same; a crash (also 1) or
  # anything else is a failure, not a result.
  "$PY" - "$run.json" "$result.tmp" "$status" <<'PY' || { rm -f "$result.tmp"; return 1; }
import json, sys
record_path, check_path, status = sys.argv[1:]
try:
    record, check = (json.load(open(path)) for path in (record_path, check_path))
except (OSError, ValueError) as error:
    sys.exit(f"{check_path}: the open check wrote no JSON (exit {status}): {error}")
if check.get("fit") is not (status == "0") or status not in ("0", "1"):
    sys.exit(f"{check_path}: the open check exited {status}, its JSON says fit={check.get('fit')}")
json.dump({"recipe": record["recipe"], **check}, open(check_path, "w"), indent=1)
PY
  mv "$result.tmp" "$result"
}

ensemble_row() {  # ensemble_row NAME RECIPE RUNS SPLIT: `orca ensemble` of the split's three seeds
  local name=$1$TAG-split-$4 recipe=$2 runs=$3 split=$4 seeds=(0 1 2)
  local result=benchmarks/results/orca_ensemble/$name.json folder=runs/ensemble/$name
  local members=("${seeds[@]/#/"$runs/split-$split-seed-"}")
  local check=benchmarks/results/open_judge_check/$name-ensemble.json
  # Written once per set of member runs: their recipes are kept and compared, as the check's.
  "$PY" - "$result" "${members[@]/%/.json}" <<'PY' && return 0
import json, sys
try:
    kept = json.load(open(sys.argv[1]))
    sys.exit(0 if kept["recipes"] == [json.load(open(p))["recipe"] for p in sys.argv[2:]] else 1)
except (OSError, ValueError, KeyError, TypeError):
    sys.exit(1)
PY
  for seed in "${seeds[@]}"; do
    [ -f "$runs/split-$split-seed-$seed.json" ] && continue
    if [ -f "$result" ]; then echo "ensemble $name: kept ($result; its runs are not here)" >&2; return 0; fi
    # A row kept from an earlier sitting whose run folder is gone (the table runs every seed
    # before this): the ensemble needs its checkpoint, so train it again, its row left as it is.
    echo "ensemble $name: training split $split seed $seed again for its checkpoint" >&2
    table "$recipe" "$runs" "" --seeds "$seed" --split-seeds "$split" >/dev/null || return 1
  done
  mkdir -p "$(dirname "$result")" "$(dirname "$check")"
  "$PY" -m orca_judge.cli.main ensemble "${members[@]}" --output "$folder" --overwrite
  local fraction status=0
  fraction=$("$PY" -c 'import json, sys; print(json.load(open(sys.argv[1]))["recipe"]["heldout_fraction"])' "${members[0]}.json")
  local select=(benchmarks/orca_judge_select.py --part heldout --split-seed "$split"
    --heldout-fraction "$fraction" --data data/orca-human --json)
  "$PY" "${select[@]}" --checkpoint "${members[@]}" > "$result.members.tmp"
  "$PY" "${select[@]}" --checkpoint "$folder" > "$result.folder.tmp"
  if [[ $1 = abstention* ]]; then  # is the ensemble fit for open-ended AQUA? (0 fit, 1 not)
    "$PY" -m eval_plugins.cli.main open-judge-check --checkpoint "$folder" --data-dir "$AQUA_DATA" \
      --human-items data/orca-human/dev.jsonl --device cpu --json > "$check.tmp" || status=$?
  fi
  "$PY" - "$result" "$check" "$status" "${members[@]/%/.json}" <<'PY' || { rm -f "$result".*.tmp "$check.tmp"; return 1; }
import json, os, subprocess, sys
result, check, status, records = *sys.argv[1:4], sys.argv[4:]
recipes = [json.load(open(p))["recipe"] for p in records]
members, written = (json.load(open(f"{result}.{part}.tmp")) for part in ("members", "folder"))
rows = members["rows"]
commit = subprocess.run(["git", "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
if os.path.exists(f"{check}.tmp"):
    fit = json.load(open(f"{check}.tmp"))
    if fit.get("fit") is not (status == "0") or status not in ("0", "1"):
        sys.exit(f"{check}: the open check exited {status}, its JSON says fit={fit.get('fit')}")
    json.dump({"recipes": recipes, **fit}, open(f"{check}.tmp", "w"), indent=1)
    os.replace(f"{check}.tmp", check)
json.dump({
    "part": members["part"], "n": members["n"], "recipes": recipes,
    "members": {k: v for k, v in rows.items() if k != "ensemble (mixture)"},
    "mixture": rows["ensemble (mixture)"],
    # the written folder scored as one judge: the mixture's figures, and its cost
    "ensemble_folder": next(iter(written["rows"].values())),
    "commit": commit,
}, open(f"{result}.tmp", "w"), indent=1)
os.replace(f"{result}.tmp", result)
PY
  rm -f "$result.members.tmp" "$result.folder.tmp"
}

table curriculum-synthetic.yaml "runs/seed-table$TAG" "benchmarks/results/orca_seed_table$TAG.json" \
  --seeds 0 1 2 --split-seeds 0 1
ensemble_row plain curriculum-synthetic.yaml "runs/seed-table$TAG" 0
ensemble_row plain curriculum-synthetic.yaml "runs/seed-table$TAG" 1
for split in 0 1; do
  for seed in 0 1 2; do
    table curriculum-synthetic-abstention.yaml "runs/seed-table-abstention$TAG" \
      "benchmarks/results/orca_seed_table_abstention$TAG.json" --seeds "$seed" --split-seeds "$split"
    open_check "$split" "$seed"
  done
  ensemble_row abstention curriculum-synthetic-abstention.yaml "runs/seed-table-abstention$TAG" "$split"
done
