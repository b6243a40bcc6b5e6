#!/usr/bin/env bash
# The two ORCA seed tables, one training run at a time, in the order that answers most first:
# the same recipe with the abstention kinds (curriculum-synthetic-abstention.yaml) once, for
# the open-ended check, then the recommended recipe (curriculum-synthetic.yaml) and the rest,
# split seed 0 before split seed 1. Every step
# resumes where it stopped (benchmarks/orca_seed_table.py), so start it again at each sitting:
#
#   nohup nice -n 19 benchmarks/seed_tables.sh > runs/seed-tables.log 2>&1 &
#
# and commit benchmarks/results/orca_seed_table*.json after each finished run. Needs the
# human ratings in data/orca-human (orca-fetch-ratings) and the backbone in models/smollm2-135m.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
export HF_HUB_OFFLINE=1 OMP_NUM_THREADS=${OMP_NUM_THREADS:-2}

table() {  # table RECIPE OUT RESULTS --seeds ... --split-seeds ...
  local config=$1 out=$2 results=$3
  shift 3
  "$PY" benchmarks/orca_seed_table.py --config "configs/orca/$config" --data-dir data/orca-human \
    --backbone models/smollm2-135m --out "$out" --results "$results" "$@"
}

plain=(curriculum-synthetic.yaml runs/seed-table benchmarks/results/orca_seed_table.json)
abstain=(curriculum-synthetic-abstention.yaml runs/seed-table-abstention
         benchmarks/results/orca_seed_table_abstention.json)
table "${abstain[@]}" --seeds 0 --split-seeds 0
table "${plain[@]}" --seeds 0 1 2 --split-seeds 0
table "${plain[@]}" --seeds 0 1 2 --split-seeds 1
table "${abstain[@]}" --seeds 0 1 2 --split-seeds 0 1
