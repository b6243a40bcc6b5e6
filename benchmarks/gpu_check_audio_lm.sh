#!/usr/bin/env bash
# GPU check of aqua-audiolm: a tiny random Qwen2-Audio, built here offline, run in bfloat16
# on CUDA, first through the model class directly, then through `aqua-eval` on a few AQUA
# items with synthesized stand-in audio. Nothing is downloaded. Takes about a minute.
#
#   bash benchmarks/gpu_check_audio_lm.sh            # from the repository root
#
# Settings (environment): PYTHON (default python), AQUA_DATA_DIR (the released JSON files;
# default ${AQUA_SHARED_DIR:-../shared}/data/aqua-bench; the aqua-eval step is skipped
# without them), OUT (where the model, audio and results go; default a temporary folder).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python}
WORK=${OUT:-$(mktemp -d)}
DATA=${AQUA_DATA_DIR:-${AQUA_SHARED_DIR:-../shared}/data/aqua-bench}
export HF_HUB_OFFLINE=1 HF_DATASETS_OFFLINE=1 TOKENIZERS_PARALLELISM=false PYTHONUNBUFFERED=1

if ! "$PY" -c "import aqua_tasks.task_configs" 2>/dev/null; then
    echo "== installing this checkout (editable, no dependencies)"
    "$PY" -m pip install --quiet --no-deps --no-build-isolation -e .
fi
"$PY" -c "import torch; assert torch.cuda.is_available(), 'no CUDA device'; \
print('torch', torch.__version__, torch.cuda.get_device_name(0), \
'bf16' if torch.cuda.is_bf16_supported() else 'no bf16')"

echo "== building the tiny model in $WORK/tiny"
"$PY" -m aqua_tasks.tiny_audio_lm "$WORK/tiny"

echo "== direct: bfloat16 on cuda, batched equals one at a time"
"$PY" - "$WORK/tiny" <<'EOF'
import sys

import numpy as np
import torch
from lm_eval.api.instance import Instance

from aqua_tasks.audio_lm import AudioLM

lm = AudioLM(pretrained=sys.argv[1], device="cuda", dtype="bfloat16", max_gen_toks=8)
assert next(lm.model.parameters()).dtype == torch.bfloat16, "weights are not bf16"
assert lm.model.device.type == "cuda", f"model on {lm.model.device}"
rng = np.random.default_rng(0)
requests = [
    Instance(
        "generate_until",
        {},
        (f"<audio>\nQuestion {n}?", {"until": [], "max_gen_toks": 64},
         {"audio": [{"array": rng.standard_normal(int(rate * sec)).astype(np.float32) * 0.1,
                     "sampling_rate": rate}]}),
        0,
        ("gpu_check", n, 1),
    )
    for n, (rate, sec) in enumerate([(16000, 5.0), (44100, 1.0), (22050, 3.0), (16000, 0.2)])
]
inputs = lm.encode([lm.prompt(r.args[0], 1) for r in requests[:2]], [r.args[2]["audio"] for r in requests[:2]])
assert inputs["input_ids"].device.type == "cuda"
assert inputs["input_features"].dtype == torch.bfloat16
lm.batch_size = 1
single = lm.generate_until(requests, disable_tqdm=True)
lm.batch_size = 4
batched = lm.generate_until(requests, disable_tqdm=True)
print("replies:", single)
same = sum(a == b for a, b in zip(single, batched))
# bf16 sums differ with padding, so a random model's near-tied logits may flip: report only.
print(f"batched == single for {same}/{len(single)} replies (bf16)")
print("direct check OK")
EOF

if [[ ! -f "$DATA/AQUA-Bench-Animal-Sounds-Track.json" ]]; then
    echo "== no released data at $DATA: aqua-eval step skipped (set AQUA_DATA_DIR)"
    exit 0
fi

echo "== stand-in audio for the first 8 items of each track in $WORK/audio"
"$PY" - "$DATA" "$WORK/audio" <<'EOF'
import sys
from pathlib import Path

import numpy as np
import soundfile as sf

from aqua_tasks.audio import canonical_relpath
from aqua_tasks.data import TRACKS, load_items

data, root = sys.argv[1], Path(sys.argv[2])
rng = np.random.default_rng(0)
for track in TRACKS:
    for item in load_items(data, track)[:8]:
        path = root / canonical_relpath(track, item.audio_filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        rate = int(rng.choice([16000, 22050, 44100]))
        t = np.arange(int(rng.uniform(0.5, 5.0) * rate)) / rate
        sf.write(path, (0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * t)).astype(np.float32), rate)
EOF

echo "== aqua-eval: --model hf-audiolm-qwen on cuda in bfloat16"
"$PY" -m aqua_tasks.cli_eval \
    --model hf-audiolm-qwen \
    --model_args "pretrained=$WORK/tiny,device=cuda,dtype=bfloat16,batch_size=4,max_gen_toks=16" \
    --tasks aqua_animal,aqua_music,aqua_vocal --limit 8 \
    --metadata "{\"data_dir\": \"$DATA\", \"audio_root\": \"$WORK/audio\"}" \
    --log_samples --output_path "$WORK/results"
"$PY" - "$WORK/results" <<'EOF'
import json
import sys
from pathlib import Path

results = json.loads(sorted(Path(sys.argv[1]).rglob("results_*.json"))[-1].read_text())
assert results["config"]["model"] == "aqua-audiolm"
for task in ("aqua_animal", "aqua_music", "aqua_vocal"):
    assert results["results"][task]["n_items,none"] == 8, task
print("aqua-eval check OK:", {t: r["n_items,none"] for t, r in results["results"].items()})
EOF
