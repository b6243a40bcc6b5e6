#!/usr/bin/env bash
# GPU check of aqua-audiolm, one command, under 10 minutes on one GPU. Nothing is downloaded.
#
#   bash benchmarks/gpu_check_audio_lm.sh                      # tiny random Qwen2-Audio, built here
#   bash benchmarks/gpu_check_audio_lm.sh --pretrained DIR     # a local checkpoint (e.g. Qwen2-Audio-7B-Instruct)
#   bash benchmarks/gpu_check_audio_lm.sh --omni               # tiny random Qwen2.5-Omni thinker
#   bash benchmarks/gpu_check_audio_lm.sh --family audioflamingo3   # a tiny model of any family
#                                   # tests/support/tiny_audio_families.py builds (FAMILIES)
#   bash benchmarks/gpu_check_audio_lm.sh --device cpu --dtype float32 --items 8   # CPU dry run
#
# 1. direct: the same requests (clips of 0.5-12 s at 16/22.05/44.1 kHz) one at a time and in
#    batches of --batch-size; asserts the device and dtype, asserts that at least
#    --min-agreement of the batched replies equal the unbatched ones (1.0: all), and prints
#    items/s of both and the peak GPU memory.
# 2. aqua eval: with the released questions (AQUA_DATA_DIR, default
#    ${AQUA_SHARED_DIR:-../shared}/data/aqua-bench), --limit items per track on synthesized
#    stand-in audio through the real CLI; prints the run record from the results file
#    (items/s, peak memory, devices, revision). Skipped without the released files.
#
# Options: --pretrained DIR (any family docs/audio_lm.md lists), --omni (tiny model: a Qwen2.5-Omni
# thinker), --family NAME (tiny model of that family), --device (cuda), --dtype (bfloat16), --batch-size (8), --items (32,
# direct requests), --limit (8 items per track), --max-gen-toks (32), --min-agreement (1.0).
# Environment: PYTHON (default python), OUT (work folder; default a temporary one).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
WORK=${OUT:-$(mktemp -d)}
DATA=${AQUA_DATA_DIR:-${AQUA_SHARED_DIR:-../shared}/data/aqua-bench}
PRETRAINED="" TINY_ARGS="" DEVICE=cuda DTYPE=bfloat16 BATCH=8 ITEMS=32 LIMIT=8 MAX_NEW=32 MIN_AGREE=1.0
while [[ $# -gt 0 ]]; do
    case "$1" in
        --pretrained) PRETRAINED=$2; shift 2 ;;
        --omni) TINY_ARGS=--omni; shift ;;
        --family) TINY_ARGS="--family $2"; shift 2 ;;
        --device) DEVICE=$2; shift 2 ;;
        --dtype) DTYPE=$2; shift 2 ;;
        --batch-size) BATCH=$2; shift 2 ;;
        --items) ITEMS=$2; shift 2 ;;
        --limit) LIMIT=$2; shift 2 ;;
        --max-gen-toks) MAX_NEW=$2; shift 2 ;;
        --min-agreement) MIN_AGREE=$2; shift 2 ;;
        -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
        *) echo "gpu_check_audio_lm.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
    esac
done
if (( BATCH < 8 )) && [[ $DEVICE == cuda* ]]; then
    echo "gpu_check_audio_lm.sh: --batch-size must be at least 8 on a GPU" >&2; exit 2
fi
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1
# Replies of this check never go to (or come from) the user's reply journal.
export AQUA_CACHE_DIR="$WORK/cache"

if ! "$PY" -c "import aqua_tasks.task_configs" 2>/dev/null; then
    echo "== installing this checkout (editable, no dependencies)"
    "$PY" -m pip install --quiet --no-deps --no-build-isolation -e .
fi
"$PY" - "$DEVICE" <<'EOF'
import sys

import torch

if sys.argv[1].startswith("cuda"):
    assert torch.cuda.is_available(), "no CUDA device (use --device cpu for a dry run)"
    print("torch", torch.__version__, torch.cuda.get_device_name(0),
          "bf16" if torch.cuda.is_bf16_supported() else "no bf16")
else:
    print("torch", torch.__version__, "on", sys.argv[1], "(dry run)")
EOF

if [[ -z $PRETRAINED ]]; then
    echo "== building the tiny model in $WORK/tiny"
    "$PY" tests/support/tiny_audio_lm.py "$WORK/tiny" $TINY_ARGS >/dev/null
    PRETRAINED=$WORK/tiny
fi

echo "== direct: $ITEMS requests, batch 1 vs batch $BATCH, $DTYPE on $DEVICE"
"$PY" - "$PRETRAINED" "$DEVICE" "$DTYPE" "$BATCH" "$ITEMS" "$MAX_NEW" "$MIN_AGREE" <<'EOF'
import sys
import time

import numpy as np
import torch
from lm_eval.api.instance import Instance

from aqua_tasks.models.hf_audio_lm import AudioLM
from aqua_tasks.models.hf_audio_lm_record import peak_memory_mb

pretrained, device, dtype = sys.argv[1:4]
batch, items, max_new = (int(x) for x in sys.argv[4:7])
min_agree = float(sys.argv[7])
lm = AudioLM(pretrained=pretrained, device=device, dtype=dtype, max_gen_toks=max_new,
             reply_cache="off")
weights = next(lm.model.parameters())
assert str(weights.dtype) == f"torch.{dtype}", f"weights are {weights.dtype}, not {dtype}"
assert weights.device.type == torch.device(device).type, f"model on {weights.device}"
rng = np.random.default_rng(0)
rates = [16000, 22050, 44100]
requests = []
for n in range(items):
    rate = rates[n % 3]
    seconds = float(rng.uniform(0.5, 12.0))
    t = np.arange(int(rate * seconds)) / rate
    wave = 0.3 * np.sin(2 * np.pi * rng.uniform(100, 3000) * t) + 0.05 * rng.standard_normal(t.size)
    audio = {"array": wave.astype(np.float32), "sampling_rate": rate}
    question = f"What do you hear in this clip? Answer in a few words. ({n})"
    requests.append(Instance("generate_until", {}, (f"<audio>\n{question}",
                    {"until": [], "max_gen_toks": max_new}, {"audio": [audio]}), 0,
                    ("gpu_check", n, 1)))
if device.startswith("cuda"):
    torch.cuda.reset_peak_memory_stats()
speeds = {}
replies = {}
for size in (1, batch):
    lm.batch_size = size
    start = time.perf_counter()
    replies[size] = lm.generate_until(requests, disable_tqdm=True)
    speeds[size] = len(requests) / (time.perf_counter() - start)
same = [a == b for a, b in zip(replies[1], replies[batch], strict=True)]
print(f"items/s: batch 1 {speeds[1]:.2f}, batch {batch} {speeds[batch]:.2f} "
      f"({speeds[batch] / speeds[1]:.1f}x)")
print("peak memory (MB):", peak_memory_mb(lm.device))
print(f"batched == unbatched for {sum(same)}/{len(same)} replies")
for n, ok in enumerate(same):
    if not ok:
        print(f"  differs at {n}: {replies[1][n]!r} vs {replies[batch][n]!r}")
assert sum(same) >= min_agree * len(same), (
    f"only {sum(same)}/{len(same)} batched replies equal the unbatched ones "
    f"(--min-agreement {min_agree}); see docs/ci.md on self-noise"
)
print("direct check OK")
EOF

if [[ ! -f "$DATA/AQUA-Bench-Animal-Sounds-Track.json" ]]; then
    echo "== no released data at $DATA: aqua eval step skipped (set AQUA_DATA_DIR)"
    exit 0
fi

echo "== stand-in audio for the first $LIMIT items of each track in $WORK/audio"
"$PY" - "$DATA" "$WORK/audio" "$LIMIT" <<'EOF'
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

from aqua_tasks.audio.clips import canonical_relpath
from aqua_tasks.core.data import TRACKS, load_items

data, root, limit = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3])
rng = np.random.default_rng(0)
for track in TRACKS:
    for item in load_items(data, track)[:limit]:
        path = root / canonical_relpath(track, item.audio_filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        rate = int(rng.choice([16000, 22050, 44100]))
        t = np.arange(int(rng.uniform(0.5, 5.0) * rate)) / rate
        sf.write(path, (0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * t)).astype(np.float32), rate)
EOF

echo "== aqua eval: --model aqua-audiolm, $DTYPE on $DEVICE, batch $BATCH"
"$PY" -m eval_plugins.cli.main eval \
    --model aqua-audiolm \
    --model_args "pretrained=$PRETRAINED,device=$DEVICE,dtype=$DTYPE,batch_size=$BATCH,max_gen_toks=$MAX_NEW" \
    --tasks aqua_animal,aqua_music,aqua_vocal --limit "$LIMIT" \
    --metadata "{\"data_dir\": \"$DATA\", \"audio_root\": \"$WORK/audio\"}" \
    --log_samples --output_path "$WORK/results" >/dev/null
"$PY" - "$WORK/results" "$LIMIT" <<'EOF'
import json
import sys
from pathlib import Path

results = json.loads(sorted(Path(sys.argv[1]).rglob("results_*.json"))[-1].read_text())
assert results["config"]["model"] == "aqua-audiolm"
for task in ("aqua_animal", "aqua_music", "aqua_vocal"):
    assert results["results"][task]["n_items,none"] == int(sys.argv[2]), task
record = results["config"]["aqua_audiolm"]
print("run record:", json.dumps(record))
print("aqua eval check OK:", {t: r["n_items,none"] for t, r in results["results"].items()})
EOF
