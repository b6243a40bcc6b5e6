"""The samples file of a whole track stays small: one packed integer per metric, lean docs."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from aqua_tasks.core.manifest import DOC_FIELDS, MANIFEST_FIELDS
from aqua_tasks.core.scoring import unpack_outcome

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent

# 0.1.0 logged a ~185-byte dict under each of the 18 metrics of a line and the whole run
# manifest in every doc (7.6 MB a track); a 5-entry list with the clip's name then took ~71
# bytes (5.0 MB). The packed integer takes at most 5 digits, and the doc leaves the manifest
# to the results file; the rest of a line (question, prompt, lm-eval's metric-name list and
# hashes) is ~1.7 kB whatever the metric values are.
MAX_VALUE_BYTES = 5
MAX_TRACK_BYTES = 3_000_000


def test_a_1440_item_track_logs_compact_outcomes_under_every_metric(
    tmp_path, released_dir, released_audio_root
):
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    proc = subprocess.run(
        [
            str(BIN / "aqua"),
            "eval",
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
        assert all(v == values[0] for v in values) and type(values[0]) is int
        clip, item_type, correct, parsed, excluded = unpack_outcome(values[0])
        assert (clip, item_type, excluded) == (doc["clip_index"], doc["type"], False)
        assert correct == (doc["options"][0] == doc["answer"])  # the model answers (a)
        assert parsed is True
        assert len(json.dumps(values[0])) <= MAX_VALUE_BYTES, values[0]
        assert set(doc) & set(MANIFEST_FIELDS) == set(DOC_FIELDS)
    assert samples.stat().st_size <= MAX_TRACK_BYTES
