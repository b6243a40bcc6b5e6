"""The samples file of a whole track stays small: each AQUA metric logs a 5-entry outcome."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent

# Written before, the per-item dict took ~185 bytes under each of the 18 metrics of a line
# (7.6 MB a track). The outcome list takes ~71; the rest of a line (doc, prompt, lm-eval's
# metric-name list and hashes) is ~2.2 kB whatever the metric values are.
MAX_VALUE_BYTES = 100
MAX_TRACK_BYTES = 5_500_000


def test_a_1440_item_track_logs_compact_outcomes_under_every_metric(
    tmp_path, released_dir, released_audio_root
):
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    proc = subprocess.run(
        [
            str(BIN / "aqua-eval"),
            "--model",
            "aqua-first-option",
            "--tasks",
            "aqua_animal",
            "--metadata",
            json.dumps(metadata),
            "--output_path",
            str(tmp_path),
            "--log_samples",
        ],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"},
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    (samples,) = tmp_path.rglob("samples_aqua_animal_*.jsonl")
    lines = samples.read_text(encoding="utf-8").splitlines()
    assert len(lines) == 1440
    for line in lines:
        sample = json.loads(line)
        doc = sample["doc"]
        assert len(sample["metrics"]) == 18
        values = [sample[m] for m in sample["metrics"]]
        assert all(v == values[0] for v in values)
        clip, item_type, correct, parsed, excluded = values[0]
        assert (clip, item_type, excluded) == (doc["audio_filename"], doc["type"], False)
        assert isinstance(correct, bool) and isinstance(parsed, bool)
        size = len(json.dumps(values[0], ensure_ascii=False).encode())
        assert size <= MAX_VALUE_BYTES, values[0]
    assert samples.stat().st_size <= MAX_TRACK_BYTES
