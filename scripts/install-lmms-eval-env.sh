#!/usr/bin/env bash
# Create a second virtual environment that runs this package under lmms-eval 0.7.3.
#
# Why a separate environment and not a pip extra: lmms-eval 0.7.3 must be installed with
# --no-deps (its declared dependencies pull torchvision, whose CUDA-built wheel breaks the
# Qwen2-Audio processor import on CPU boxes, and a newer torch), it imports librosa without
# declaring it, and it needs filelock<4, which the main environment's packages do not accept.
#
# usage: scripts/install-lmms-eval-env.sh [VENV_DIR]        (default: .venv-lmms)
#   TORCH_SPEC   torch requirement (default torch==2.13.0, the CPU-friendly pin; on a GPU box
#                set it to the CUDA build you want, e.g. TORCH_SPEC='torch==2.13.0')
#   PYTHON       interpreter that creates the venv (default python3)
#   CONSTRAINTS  pip constraints file (default constraints/lmms-eval.txt, the versions the
#                lmms-eval tests last passed with; CONSTRAINTS= resolves the newest releases)
set -euo pipefail
VENV=${1:-.venv-lmms}
HERE=$(cd "$(dirname "$0")/.." && pwd)
PY=${PYTHON:-python3}
TORCH_SPEC=${TORCH_SPEC:-torch==2.13.0}
CONSTRAINTS=${CONSTRAINTS-$HERE/constraints/lmms-eval.txt}
PIN=()
if [[ -n $CONSTRAINTS ]]; then
    PIN=(-c "$CONSTRAINTS")
fi

"$PY" -m venv "$VENV"
PIP="$VENV/bin/python -m pip"
$PIP install --quiet --upgrade pip
# lmms-eval's run-time imports (its audio path), without torchvision; this package's
# dependencies; pytest and pytest-xdist for tests_lmms/ (setup.cfg runs tests in parallel).
$PIP install --quiet "${PIN[@]}" "$TORCH_SPEC" transformers accelerate datasets evaluate sacrebleu loguru \
    pytz tenacity jinja2 pyyaml pillow pandas dill librosa soundfile pytablewriter \
    'filelock<4' peft regex numpy scipy tqdm 'lm-eval>=0.4.13,<0.5' pytest pytest-xdist
$PIP install --quiet "${PIN[@]}" --no-deps 'lmms-eval==0.7.3'
# This package with its `plot` extra (matplotlib: the charts of `aqua report`, which the
# documented commands make), its `wandb` extra (lmms-eval's `--wandb_args`) and its `voxtral`
# extra (mistral-common: Voxtral under lmms-eval, which has no class of its own). Its other
# dependencies are installed above, so pip adds only the extras' packages (pinned in the
# constraints file like the rest; lmms-eval's own metadata names an older wandb, which its
# --no-deps install never reads).
$PIP install --quiet "${PIN[@]}" -e "$HERE[plot,wandb,voxtral]"
"$VENV/bin/python" - <<'PY'
import importlib.metadata as md
import lmms_eval  # noqa: F401  (fails here, not in the first run, if the set is incomplete)
import matplotlib  # noqa: F401  (aqua report's charts)
import wandb  # noqa: F401  (--wandb_args)
import mistral_common  # noqa: F401  (Voxtral's tokenizer)
print("lmms-eval", md.version("lmms-eval"), "| torch", md.version("torch"),
      "| filelock", md.version("filelock"), "| matplotlib", md.version("matplotlib"),
      "| wandb", md.version("wandb"))
PY
