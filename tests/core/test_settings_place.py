"""Hints name the place the running harness takes settings from: --metadata or AQUA_METADATA."""

from __future__ import annotations

import pytest

from aqua_tasks.audio.clips import AudioRoots, fix_hint, resolve_audio
from aqua_tasks.core.data import track_file
from aqua_tasks.core.settings_place import (
    LMMS_EVAL_PLACE,
    settings_given_in,
    settings_place,
)
from aqua_tasks.errors import AquaDataError, AudioFileError
from orca_judge.errors import OrcaMetricError
from orca_judge.metric.settings import LMMS_EVAL_METADATA_HINT, resolve_settings


def test_lm_eval_is_the_default_place_and_lmms_eval_hints_name_its_variable(tmp_path):
    assert settings_place() == "--metadata"
    assert "in --metadata to the folder that holds ESC-50-master/" in fix_hint("animal")
    with settings_given_in(LMMS_EVAL_PLACE):
        for track in ("animal", "music", "mmau"):
            hint = fix_hint(track)
            assert "in AQUA_METADATA to the folder" in hint and "--metadata" not in hint
        with pytest.raises(AquaDataError) as missing:
            track_file(None, "animal")
        with pytest.raises(AudioFileError) as clip:
            resolve_audio("vocal", "audio_vocal/x.wav", AudioRoots(audio_root=str(tmp_path)))
    assert settings_place() == "--metadata"  # restored on leaving
    assert "--metadata" not in str(missing.value) and "--metadata" not in str(clip.value)
    assert 'e.g. AQUA_METADATA=\'{"data_dir": "/path/to/AQUA-Bench"' in str(missing.value)
    assert "in AQUA_METADATA to the folder that holds" in str(clip.value)
    with pytest.raises(AquaDataError, match=r"e\.g\. --metadata '\{\"data_dir\""):
        track_file(None, "animal")


def test_the_orca_checkpoint_hint_names_how_the_harness_sets_metadata():
    with pytest.raises(OrcaMetricError) as lm_eval:
        resolve_settings({}, {}, environ={})
    with pytest.raises(OrcaMetricError) as lmms_eval:
        resolve_settings({}, {}, environ={}, metadata_hint=LMMS_EVAL_METADATA_HINT)
    assert '--metadata \'{"orca": {"checkpoint": ...}}\' or ORCA_CHECKPOINT' in str(lm_eval.value)
    assert str(lmms_eval.value).endswith(
        "`checkpoint:` on the metric entry, `metadata: {orca: {checkpoint: ...}}` in the task "
        "YAML or ORCA_CHECKPOINT"
    )
