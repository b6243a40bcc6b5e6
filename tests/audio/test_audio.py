"""Audio resolution, decoding and the `aqua audio` CLI, on real clips and released names."""

from __future__ import annotations

import copy
import io
import json
import os
import pickle
from collections.abc import Mapping
from math import gcd
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from scipy.signal import resample_poly
from shared_data import shared_data, shared_path

from aqua_tasks.audio import clips as audio_module
from aqua_tasks.audio.clips import (
    TARGET_SAMPLING_RATE,
    AudioRoots,
    LazyAudio,
    audio_for_item,
    candidate_paths,
    load_audio,
    probe_audio,
    released_parts,
    resolve_audio,
)
from aqua_tasks.cli.audio import main
from aqua_tasks.core.data import TRACK_FILE_STEMS, load_items
from aqua_tasks.errors import AquaDataError, AudioFileError

DATA_DIR = shared_path("aqua-bench")
DEMO_AUDIO = shared_path("aqua-demo-audio")
DEMO_CLIPS = ["4-181955-C-3.wav", "Acoustic_Guitar-2940.wav", "m1553_0_cough.wav"]
DEMO_CLIPS.append("6aee68bf-6629-442b-981d-ae8195597c8e.wav")


# Real released names (main files), one per resolution rule.
ANIMAL_NAME = "ESC-50-master/audio_16k/1-100032-A-0.wav"
VOCAL_NAME = "/work/u2619111/frank/vocalsound_16k/audio_16k/f0004_0_laughter.wav"
FLUTE_NAME = "/work/u2619111/frank/Audio-Datasets/music_dataset/flute/3703.wav"
SPACED_NAME = "/work/u2619111/frank/Audio-Datasets/music_dataset/Clarinet/330 (129).wav"
PIANO_NAME = "/work/u2619111/frank/Audio-Datasets/music_dataset/Piano/302.wav"


@pytest.fixture(autouse=True)
def _offline(monkeypatch):
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")


def write_tone(path: Path, rate: int, seconds: float = 0.5, freq: float = 440.0, channels=1):
    """Write a sine tone (16-bit WAV); returns the samples written."""
    t = np.arange(round(rate * seconds)) / rate
    tone = (0.5 * np.sin(2 * np.pi * freq * t)).astype(np.float32)
    data = np.stack([tone * (1 - 0.5 * c) for c in range(channels)], axis=1)
    path.parent.mkdir(parents=True, exist_ok=True)
    sf.write(path, data if channels > 1 else tone, rate, subtype="PCM_16")
    return data


def dominant_frequency(samples: np.ndarray, rate: int) -> float:
    spectrum = np.abs(np.fft.rfft(samples))
    return float(np.fft.rfftfreq(samples.size, 1 / rate)[spectrum.argmax()])


@pytest.fixture(scope="module")
def tiny_data_dir(tmp_path_factory) -> Path:
    """Released main files cut to three real clips per track (flute and a spaced name in Music)."""
    folder = tmp_path_factory.mktemp("aqua-data")
    keep = {
        "animal": None,
        "vocal": None,
        "music": {FLUTE_NAME, SPACED_NAME, PIANO_NAME},
    }
    released = shared_data("aqua-bench")
    for track, names in keep.items():
        stem = TRACK_FILE_STEMS[track]
        entries = json.loads((released / f"{stem}.json").read_text(encoding="utf-8"))
        kept = (
            entries[:12] if names is None else [e for e in entries if e["audio_filename"] in names]
        )
        (folder / f"{stem}.json").write_text(json.dumps(kept), encoding="utf-8")
    return folder


def referenced(data_dir: Path, track: str) -> list[str]:
    return list(dict.fromkeys(item.audio_filename for item in load_items(data_dir, track)))


def run_cli(capsys, *argv: str) -> tuple[int, dict]:
    code = main([*argv, "--json"])
    return code, json.loads(capsys.readouterr().out)


# --- decoding ------------------------------------------------------------------------------


@pytest.mark.shared_data("aqua-demo-audio")
@pytest.mark.parametrize("name", DEMO_CLIPS)
def test_load_audio_resamples_each_real_clip_to_16k_mono_float32(name):
    path = DEMO_AUDIO / name
    original, rate = sf.read(path, dtype="float32")
    info = probe_audio(path)
    assert info.sampling_rate == rate and info.channels == 1

    samples = load_audio(path)

    assert samples.dtype == np.float32 and samples.ndim == 1
    assert abs(samples.size - round(info.duration * TARGET_SAMPLING_RATE)) <= 1
    assert np.isfinite(samples).all()
    energy_ratio = np.sqrt(np.mean(samples**2) / np.mean(original**2))
    assert 0.95 < energy_ratio < 1.05


@pytest.mark.shared_data("aqua-demo-audio")
def test_load_audio_leaves_a_16k_clip_unchanged():
    path = DEMO_AUDIO / "m1553_0_cough.wav"
    original, _ = sf.read(path, dtype="float32")
    np.testing.assert_array_equal(load_audio(path), original)


def test_load_audio_downmixes_stereo_by_mean(tmp_path):
    stereo = write_tone(tmp_path / "stereo.wav", 16000, channels=2)
    samples = load_audio(tmp_path / "stereo.wav")
    np.testing.assert_allclose(samples, stereo.mean(axis=1), atol=1e-4)
    assert samples.ndim == 1


def test_load_audio_downmixes_and_resamples_44k_stereo_keeping_pitch(tmp_path):
    write_tone(tmp_path / "stereo.wav", 44100, seconds=1.0, freq=1000.0, channels=2)
    samples = load_audio(tmp_path / "stereo.wav")
    assert samples.shape == (16000,)
    assert dominant_frequency(samples, 16000) == pytest.approx(1000.0, abs=2)
    # Mean of amplitudes 0.5 and 0.25 → peak 0.375.
    assert np.abs(samples[1000:-1000]).max() == pytest.approx(0.375, abs=0.01)


@pytest.mark.parametrize("rate", [8000, 11025, 22050, 32000, 44100, 48000])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_resample_gives_the_very_samples_of_scipys_resample_poly(rate, dtype):
    wave = np.random.default_rng(rate).standard_normal(rate + 37).astype(dtype)
    up, down = TARGET_SAMPLING_RATE // gcd(rate, 16000), rate // gcd(rate, 16000)
    expected = np.asarray(resample_poly(wave, up, down), dtype=np.float32)
    assert np.array_equal(audio_module.resample(wave, rate), expected)


def test_unreadable_file_is_named_by_probe_and_load(tmp_path):
    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"not a wav file at all")
    for read in (probe_audio, load_audio):
        with pytest.raises(AudioFileError, match=r"broken\.wav"):
            read(broken)


# --- settings and resolution ---------------------------------------------------------------


def test_roots_from_lm_eval_metadata_prefer_the_track_root():
    roots = AudioRoots.from_settings(
        {"audio_root": "/data/all", "music_audio_root": "/data/music", "vocal_audio_root": ""}
    )
    assert roots.root_for("music") == "/data/music"
    assert roots.root_for("animal") == "/data/all"
    assert roots.root_for("vocal") == "/data/all"
    assert AudioRoots.from_settings(None).root_for("animal") is None
    with pytest.raises(ValueError, match="animal_audio_root"):
        AudioRoots.from_settings({"animal_audio_root": 3})


@pytest.mark.shared_data("aqua-bench")
def test_released_names_are_the_ones_these_tests_use():
    names = {track: set(referenced(DATA_DIR, track)) for track in ("animal", "vocal", "music")}
    assert ANIMAL_NAME in names["animal"]
    assert VOCAL_NAME in names["vocal"]
    assert {FLUTE_NAME, SPACED_NAME, PIANO_NAME} <= names["music"]


@pytest.mark.parametrize(
    "layout",
    [
        "ESC-50-master/audio_16k/1-100032-A-0.wav",  # canonical (as released)
        "ESC-50-master/audio/1-100032-A-0.wav",  # stock ESC-50 checkout
        "audio/1-100032-A-0.wav",  # root points inside ESC-50-master
        "1-100032-A-0.wav",  # flat folder of clips
    ],
)
def test_animal_resolves_canonical_and_stock_esc50_layouts(tmp_path, layout):
    write_tone(tmp_path / layout, 44100)
    found = resolve_audio("animal", ANIMAL_NAME, AudioRoots(audio_root=str(tmp_path)))
    assert found == tmp_path / layout


def test_animal_prefers_the_prepared_16k_copy_over_stock_esc50(tmp_path):
    write_tone(tmp_path / "ESC-50-master/audio/1-100032-A-0.wav", 44100)
    write_tone(tmp_path / "ESC-50-master/audio_16k/1-100032-A-0.wav", 16000)
    found = resolve_audio("animal", ANIMAL_NAME, AudioRoots(animal=str(tmp_path)))
    assert found.parent.name == "audio_16k"


@pytest.mark.parametrize(
    "layout", ["vocalsound_16k/audio_16k", "audio_16k", "."], ids=["canonical", "release", "flat"]
)
def test_vocal_absolute_author_paths_resolve_by_file_name(tmp_path, layout):
    write_tone(tmp_path / layout / "f0004_0_laughter.wav", 16000)
    found = resolve_audio("vocal", VOCAL_NAME, AudioRoots(vocal=str(tmp_path)))
    assert found.name == "f0004_0_laughter.wav" and found.is_file()


@pytest.mark.parametrize("folder", ["flute", "Flute", "FLUTE"])
@pytest.mark.parametrize("prefix", ["music_dataset/", ""])
def test_music_class_folder_matches_regardless_of_case(tmp_path, folder, prefix):
    write_tone(tmp_path / f"{prefix}{folder}/3703.wav", 22050)
    found = resolve_audio("music", FLUTE_NAME, AudioRoots(audio_root=str(tmp_path)))
    assert found == tmp_path / f"{prefix}{folder}/3703.wav"


def test_music_names_with_spaces_and_underscored_classes_resolve(tmp_path):
    write_tone(tmp_path / "music_dataset/Clarinet/330 (129).wav", 22050)
    write_tone(tmp_path / "Acoustic Guitar/1047.wav", 22050)
    roots = AudioRoots(music=str(tmp_path))
    assert resolve_audio("music", SPACED_NAME, roots).name == "330 (129).wav"
    guitar = "/work/u2619111/frank/Audio-Datasets/music_dataset/Acoustic_Guitar/1047.wav"
    assert resolve_audio("music", guitar, roots) == tmp_path / "Acoustic Guitar/1047.wav"


def test_music_folder_listings_are_cached_across_lookups(tmp_path, monkeypatch):
    for n in range(30):
        write_tone(tmp_path / f"Flute/{n}.wav", 8000, seconds=0.01)
    listed: list[str] = []
    real_scandir = os.scandir

    def counting_scandir(path):
        listed.append(os.fspath(path))
        return real_scandir(path)

    monkeypatch.setattr(audio_module.os, "scandir", counting_scandir)
    roots = AudioRoots(music=str(tmp_path))
    for n in range(30):
        name = f"/x/music_dataset/flute/{n}.wav"
        assert resolve_audio("music", name, roots) == tmp_path / f"Flute/{n}.wav"
    assert listed.count(str(tmp_path)) == 1


def test_without_a_root_the_released_path_is_tried_as_is(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    write_tone(tmp_path / ANIMAL_NAME, 16000)
    assert candidate_paths("animal", ANIMAL_NAME, None) == [Path(ANIMAL_NAME)]
    assert resolve_audio("animal", ANIMAL_NAME, AudioRoots()).is_file()


def test_missing_clip_error_names_the_file_every_path_and_the_fix(tmp_path):
    with pytest.raises(FileNotFoundError) as caught:
        resolve_audio("animal", ANIMAL_NAME, AudioRoots(audio_root=str(tmp_path)))
    error = caught.value
    message = str(error)
    assert isinstance(error, AudioFileError) and isinstance(error, ValueError)
    assert ANIMAL_NAME in message
    assert len(error.tried) == 5
    assert all(path in message for path in error.tried)
    assert str(tmp_path / "ESC-50-master/audio/1-100032-A-0.wav") in error.tried
    assert "audio_root" in message and "animal_audio_root" in message
    assert "aqua audio prepare --source esc50" in message


def test_missing_root_is_reported_as_missing(tmp_path):
    with pytest.raises(AudioFileError, match=r"does not exist.*music_audio_root"):
        resolve_audio("music", PIANO_NAME, AudioRoots(audio_root=str(tmp_path / "nope")))


# --- LazyAudio -----------------------------------------------------------------------------


def test_audio_for_item_returns_a_lazy_16k_mapping(tmp_path):
    clip = tmp_path / "audio_16k/f0004_0_laughter.wav"
    write_tone(clip, 44100)
    audio = audio_for_item("vocal", VOCAL_NAME, AudioRoots(audio_root=str(tmp_path)))
    assert isinstance(audio, Mapping)
    assert set(audio) == {"array", "sampling_rate", "path"} and len(audio) == 3
    assert audio["sampling_rate"] == 16000 and audio["path"] == str(clip)
    assert audio["array"].shape == (8000,)


@pytest.mark.shared_data("aqua-demo-audio")
def test_lazy_audio_decodes_on_every_access_without_caching():
    audio = LazyAudio(DEMO_AUDIO / "Acoustic_Guitar-2940.wav")
    first, second = audio["array"], audio["array"]
    np.testing.assert_array_equal(first, second)
    assert first is not second and not np.shares_memory(first, second)
    assert not any(isinstance(getattr(audio, s), np.ndarray) for s in audio.__slots__)


@pytest.mark.shared_data("aqua-demo-audio")
def test_lazy_audio_repr_is_short_and_it_pickles_and_copies():
    audio = LazyAudio(DEMO_AUDIO / "m1553_0_cough.wav")
    expected = f"LazyAudio({str(DEMO_AUDIO / 'm1553_0_cough.wav')!r}, 16000 Hz)"
    assert repr(audio) == str(audio) == expected
    assert pickle.loads(pickle.dumps(audio)) == audio
    assert copy.deepcopy(audio) == audio and hash(copy.copy(audio)) == hash(audio)
    with pytest.raises(KeyError):
        audio["bytes"]


def test_audio_for_item_fails_on_an_unreadable_clip_before_inference(tmp_path):
    (tmp_path / "audio_16k").mkdir()
    (tmp_path / "audio_16k/f0004_0_laughter.wav").write_bytes(b"")
    with pytest.raises(AudioFileError, match=r"f0004_0_laughter\.wav"):
        audio_for_item("vocal", VOCAL_NAME, AudioRoots(audio_root=str(tmp_path)))


# --- aqua audio check ----------------------------------------------------------------------


def test_check_counts_found_missing_and_unreadable_per_track(tmp_path, tiny_data_dir, capsys):
    animal = referenced(tiny_data_dir, "animal")
    write_tone(tmp_path / "ESC-50-master/audio_16k" / Path(animal[0]).name, 16000)
    write_tone(tmp_path / "ESC-50-master/audio" / Path(animal[1]).name, 44100)
    (tmp_path / Path(animal[2]).name).write_bytes(b"RIFF")
    write_tone(tmp_path / "Flute/3703.wav", 22050)

    code, report = run_cli(
        capsys, "check", "--data-dir", str(tiny_data_dir), "--audio-root", str(tmp_path),
        "--tracks", "animal,music",
    )  # fmt: skip

    assert code == 1 and report["ok"] is False
    assert set(report["tracks"]) == {"animal", "music"}
    animal_report = report["tracks"]["animal"]
    assert (animal_report["referenced"], animal_report["found"], animal_report["missing"]) == (
        3,
        2,
        1,
    )
    assert animal_report["sample_rates"] == {"16000": 1, "44100": 1}
    (unreadable,) = animal_report["missing_files"]
    assert unreadable["audio_filename"] == animal[2] and unreadable["reason"] == "unreadable"
    music = report["tracks"]["music"]
    assert (music["referenced"], music["found"], music["missing"]) == (3, 1, 2)
    reasons = {m["audio_filename"]: m["reason"] for m in music["missing_files"]}
    assert reasons == {SPACED_NAME: "not found", PIANO_NAME: "not found"}


def test_check_text_output_lists_missing_files_and_the_fix(tmp_path, tiny_data_dir, capsys):
    write_tone(tmp_path / "audio_16k/m2776_0_sigh.wav", 16000)
    argv = ["check", "--data-dir", str(tiny_data_dir), "--vocal-audio-root", str(tmp_path)]
    code = main([*argv, "--tracks", "vocal"])
    out = capsys.readouterr().out
    assert code == 1
    assert f"vocal: 3 referenced, 1 found, 2 missing (root: {tmp_path})" in out
    assert "not found: /work/u2619111/frank/vocalsound_16k/audio_16k/m2998_0_laughter.wav" in out
    assert "m2776_0_sigh" not in out
    assert str(tmp_path / "vocalsound_16k/audio_16k/m2998_0_laughter.wav") in out
    assert "vocal_audio_root" in out and "aqua audio prepare --source vocalsound" in out


def test_check_rejects_an_unknown_track(tiny_data_dir, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["check", "--data-dir", str(tiny_data_dir), "--tracks", "animal,speech"])
    assert caught.value.code == 2
    assert "unknown track 'speech'" in capsys.readouterr().err


# --- aqua audio prepare --------------------------------------------------------------------


def assert_prepared(path: Path, seconds: float, freq: float | None = None) -> None:
    info = sf.info(path)
    assert (info.samplerate, info.channels, info.subtype) == (16000, 1, "PCM_16")
    assert info.frames == round(seconds * 16000)
    if freq is not None:
        samples, _ = sf.read(path, dtype="float32")
        assert dominant_frequency(samples, 16000) == pytest.approx(freq, abs=3)


def test_prepare_from_stock_esc50_folder_then_check_finds_them(tmp_path, tiny_data_dir, capsys):
    names = [Path(n).name for n in referenced(tiny_data_dir, "animal")]
    source = tmp_path / "ESC-50-master"
    for i, name in enumerate([*names, "5-9032-A-0.wav"]):
        write_tone(source / "audio" / name, 44100, seconds=1.0, freq=300.0 + 100 * i)
    out = tmp_path / "prepared"
    argv = ["prepare", "--source", "esc50", "--from", str(source), "--audio-root", str(out)]

    code, report = run_cli(capsys, *argv, "--data-dir", str(tiny_data_dir))

    assert code == 0 and report["ok"] is True
    assert (report["wanted"], report["written"], report["skipped"]) == (3, 3, 0)
    assert report["not_found"] == 0 and report["layout"] == str(out / "ESC-50-master/audio_16k")
    for i, name in enumerate(names):
        assert_prepared(out / "ESC-50-master/audio_16k" / name, 1.0, freq=300.0 + 100 * i)
    assert not (out / "ESC-50-master/audio_16k/5-9032-A-0.wav").exists()
    assert not list(out.rglob("*.tmp"))

    code, again = run_cli(capsys, *argv, "--data-dir", str(tiny_data_dir))
    assert code == 0 and (again["written"], again["skipped"]) == (0, 3)
    code, forced = run_cli(capsys, *argv, "--data-dir", str(tiny_data_dir), "--overwrite")
    assert (forced["written"], forced["skipped"]) == (3, 0)

    code, check = run_cli(
        capsys, "check", "--data-dir", str(tiny_data_dir), "--audio-root", str(out),
        "--tracks", "animal",
    )  # fmt: skip
    assert code == 0 and check["tracks"]["animal"]["found"] == 3
    assert check["tracks"]["animal"]["sample_rates"] == {"16000": 3}


def test_prepare_without_data_dir_writes_every_source_clip(tmp_path, capsys):
    source = tmp_path / "vs"
    write_tone(source / "f0004_0_laughter.wav", 44100, channels=2)
    write_tone(source / "sub/m0001_1_cough.flac", 32000)
    out = tmp_path / "out"
    code, report = run_cli(
        capsys, "prepare", "--source", "vocalsound", "--from", str(source), "--audio-root", str(out)
    )
    assert code == 0 and (report["wanted"], report["written"]) == (2, 2)
    assert_prepared(out / "vocalsound_16k/audio_16k/f0004_0_laughter.wav", 0.5, freq=440.0)
    assert_prepared(out / "vocalsound_16k/audio_16k/m0001_1_cough.wav", 0.5)


def test_prepare_music_keeps_released_folder_case_and_spaces(tmp_path, tiny_data_dir, capsys):
    source = tmp_path / "kaggle/music_dataset"
    write_tone(source / "Flute/3703.wav", 44100)
    write_tone(source / "Clarinet/330 (129).wav", 22050)
    write_tone(source / "Piano/302.wav", 32000, channels=2)
    out = tmp_path / "out"
    code, report = run_cli(
        capsys, "prepare", "--source", "music", "--from", str(tmp_path / "kaggle"),
        "--audio-root", str(out), "--data-dir", str(tiny_data_dir),
    )  # fmt: skip
    assert code == 0 and report["written"] == 3
    assert_prepared(out / "music_dataset/flute/3703.wav", 0.5, freq=440.0)
    assert_prepared(out / "music_dataset/Clarinet/330 (129).wav", 0.5, freq=440.0)
    assert_prepared(out / "music_dataset/Piano/302.wav", 0.5, freq=440.0)
    code, check = run_cli(
        capsys, "check", "--data-dir", str(tiny_data_dir), "--music-audio-root", str(out),
        "--tracks", "music",
    )  # fmt: skip
    assert code == 0 and check["tracks"]["music"]["found"] == 3


def wav_bytes(rate: int, seconds: float, channels: int = 1) -> bytes:
    buffer = io.BytesIO()
    tone = 0.3 * np.sin(2 * np.pi * 500 * np.arange(int(rate * seconds)) / rate)
    sf.write(buffer, np.tile(tone[:, None], (1, channels)), rate, format="WAV", subtype="PCM_16")
    return buffer.getvalue()


def save_hf_dataset(path: Path, columns: dict[str, list]) -> None:
    """Save a dataset shaped like the Hub copies: an Audio column holding bytes."""
    import datasets

    dataset = datasets.Dataset.from_dict(columns).cast_column("audio", datasets.Audio())
    datasets.DatasetDict({"train": dataset}).save_to_disk(str(path))


def test_prepare_from_saved_esc50_dataset_with_bytes_audio(tmp_path, tiny_data_dir, capsys):
    names = [Path(n).name for n in referenced(tiny_data_dir, "animal")]
    saved = tmp_path / "esc50-hf"
    save_hf_dataset(
        saved,
        {
            "filename": [names[0], names[1], "5-9032-A-0.wav"],
            "category": ["dog", "dog", "dog"],
            "audio": [{"bytes": wav_bytes(44100, 1.0, channels=2), "path": None}] * 3,
        },
    )
    out = tmp_path / "out"
    code, report = run_cli(
        capsys, "prepare", "--source", "esc50", "--from", str(saved), "--audio-root", str(out),
        "--data-dir", str(tiny_data_dir),
    )  # fmt: skip

    assert code == 1 and report["ok"] is False
    assert (report["wanted"], report["written"], report["not_found"]) == (3, 2, 1)
    assert report["not_found_files"] == [f"ESC-50-master/audio_16k/{names[2]}"]
    for name in names[:2]:
        assert_prepared(out / "ESC-50-master/audio_16k" / name, 1.0, freq=500.0)

    code, check = run_cli(
        capsys, "check", "--data-dir", str(tiny_data_dir), "--animal-audio-root", str(out),
        "--tracks", "animal",
    )  # fmt: skip
    assert (check["tracks"]["animal"]["found"], check["tracks"]["animal"]["missing"]) == (2, 1)


def test_prepare_from_dataset_names_clips_by_stored_audio_path(tmp_path, capsys):
    saved = tmp_path / "vocalsound-hf"
    audio = [
        {"bytes": wav_bytes(16000, 0.25), "path": f"audio/f000{i}_0_sniff.wav"} for i in (1, 2)
    ]
    save_hf_dataset(saved, {"answer": ["Sniff", "Sniff"], "audio": audio})
    out = tmp_path / "out"
    code, report = run_cli(
        capsys, "prepare", "--source", "vocalsound", "--from", str(saved), "--audio-root", str(out)
    )
    assert code == 0 and report["written"] == 2
    assert_prepared(out / "vocalsound_16k/audio_16k/f0002_0_sniff.wav", 0.25)


def test_prepare_lists_columns_when_no_file_name_is_found(tmp_path, capsys):
    saved = tmp_path / "anonymous"
    save_hf_dataset(
        saved, {"label": [1], "audio": [{"bytes": wav_bytes(16000, 0.1), "path": None}]}
    )
    code = main(["prepare", "--source", "vocalsound", "--from", str(saved), "--audio-root", "x"])
    (error,) = [line for line in capsys.readouterr().err.splitlines() if "aqua audio" in line]
    assert code == 2 and error.startswith("aqua audio: error: ")
    assert "label (int64), audio (Audio)" in error and "--name-column" in error


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--source", "esc50", "--from", "/no/such/folder"], "no such folder"),
        (["--source", "music", "--from", "{empty}"], "no <Class>/<file> audio files"),
        (["--source", "esc50", "--from", "{empty}", "--data-dir", "/no/data"], "not a directory"),
    ],
)
def test_prepare_bad_input_exits_non_zero_with_one_line(tmp_path, capsys, argv, message):
    (tmp_path / "empty").mkdir()
    argv = [a.replace("{empty}", str(tmp_path / "empty")) for a in argv]
    code = main(["prepare", *argv, "--audio-root", str(tmp_path / "out")])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and "\n" not in err
    assert not (tmp_path / "out").exists()


def test_prepare_rejects_an_unknown_source(capsys):
    with pytest.raises(SystemExit) as caught:
        main(["prepare", "--source", "audioset", "--from", "x", "--audio-root", "y"])
    assert caught.value.code == 2
    assert "invalid choice: 'audioset'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("track", "audio_filename"),
    [
        ("music", "music_dataset/Flute/../../../outside.wav"),
        ("music", "music_dataset/../.."),
        ("animal", "ESC-50-master/audio_16k/.."),
        ("vocal", ".."),
    ],
)
def test_a_released_path_whose_clip_parts_leave_the_audio_root_is_refused(
    tmp_path, track, audio_filename
):
    roots = AudioRoots.from_settings({"audio_root": str(tmp_path / "root")})
    (tmp_path / "outside.wav").write_bytes(b"")  # what a `..` would reach
    with pytest.raises(AquaDataError, match="escapes its audio root"):
        resolve_audio(track, audio_filename, roots)


def test_dots_elsewhere_in_a_released_path_stay_inside_the_root(tmp_path):
    # Only the clip's own parts are joined under the root; the rest of the path is not used.
    (name,) = released_parts("animal", "../../ESC-50-master/audio_16k/1-100-A-0.wav")
    assert name == "1-100-A-0.wav"
    for path in candidate_paths("music", "x/../../Flute/1.wav", tmp_path):
        assert path.resolve().is_relative_to(tmp_path.resolve())
