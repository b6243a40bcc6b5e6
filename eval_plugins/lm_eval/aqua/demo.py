"""A self-contained AQUA run (behind `aqua demo`): built-in questions and synthesized audio."""

from __future__ import annotations

import json
import math
import random
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import soundfile as sf

from aqua_tasks.audio.clips import canonical_relpath
from aqua_tasks.core.data import REJECTION_STRINGS, TRACK_FILE_STEMS, TRACKS
from aqua_tasks.core.task_name import MAIN_FAMILY, TaskName
from aqua_tasks.reports.run_metrics import aqua_rows
from eval_common.outputs import atomic_path, write_text

DEMO_CLASSES: dict[str, tuple[str, ...]] = {
    "animal": ("Dog", "Rooster", "Cow", "Frog", "Cat", "Sheep"),
    "music": ("Piano", "Violin", "Flute", "Trumpet", "Harmonica", "Drum set"),
    "vocal": ("Laughter", "Sighs", "Coughs", "Sneezes", "Sniffs", "Throat clearings"),
}
SOURCE_LABEL = {"animal": "animal sound", "music": "instrumental sound", "vocal": "vocal sound"}
MISMATCHED_SETS: tuple[tuple[str, ...], ...] = (
    ("Red", "Blue", "Green", "Yellow"),
    ("Coffee", "Tea", "Juice", "Milk"),
    ("Teacher", "Doctor", "Pilot", "Chef"),
)
UNANSWERABLE_QUESTIONS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("What colour is the source of the sound in the audio?", ("Red", "Blue", "Green", "Black")),
    ("In which city was this recording made?", ("Paris", "Tokyo", "Lima", "Cairo")),
    ("How old is the person who made the recording?", ("12", "25", "40", "68")),
)
GUIDANCE = "Please select one from the options provided."
SAMPLE_RATES = (16000, 22050, 44100)
GROUP_ROW = "all (aqua)"
DEMO_MODELS = ("aqua-always-reject", "aqua-first-option", "aqua-random")
DEMO_NAMES = ("questions", "audio")  # what write_demo_data puts in its folder


def _prompt(stem: str, options: Sequence[str]) -> str:
    inline = " ".join(f"({chr(ord('a') + i)}) {o}" for i, o in enumerate(options))
    return f"{stem} {inline}\n{GUIDANCE}"


def _audio_filename(track: str, label: str, clip: int) -> str:
    # The same path shapes as the release, so the demo exercises the real resolution rules.
    slug = label.replace(" ", "_")
    if track == "animal":
        return f"ESC-50-master/audio_16k/{clip + 1}-{1000 + clip}-A-{clip}.wav"
    if track == "vocal":
        return f"/datasets/vocalsound/audio_16k/d{clip:04d}_0_{slug.lower()}.wav"
    return f"/datasets/music_dataset/{slug}/{clip + 1}.wav"


def demo_questions(track: str, clips_per_class: int, seed: int = 0) -> list[dict]:
    """Questions in the released four-type layout (Solvable, AAD, IASD, IAQD per clip)."""
    rng = random.Random(f"{seed}|{track}")
    classes = DEMO_CLASSES[track]
    none, unanswerable = REJECTION_STRINGS["main"]
    stem = f"Which {SOURCE_LABEL[track]} can be heard in the recording?"
    entries: list[dict] = []
    for clip in range(clips_per_class * len(classes)):
        label = classes[clip % len(classes)]
        others = [c for c in classes if c != label]
        solvable = [*rng.sample(others, 4), label]
        rng.shuffle(solvable)
        absent = [*rng.sample(others, 4), none]
        mismatched = [*MISMATCHED_SETS[clip % len(MISMATCHED_SETS)], none]
        question, choices = UNANSWERABLE_QUESTIONS[clip % len(UNANSWERABLE_QUESTIONS)]
        common = {
            "audio_id": str(clip),
            "audio_filename": _audio_filename(track, label, clip),
            "audio_animal" if track == "animal" else "audio_vocal": label,
        }
        for item_type, item_stem, options, answer in (
            ("Solvable", stem, solvable, label),
            ("AAD", stem, absent, none),
            ("IASD", f"Which property best describes the {SOURCE_LABEL[track]}?", mismatched, none),
            ("IAQD", question, [*choices, unanswerable], unanswerable),
        ):
            entry = {"id": len(entries), "type": item_type}
            if item_type != "Solvable":
                entry["subtype"] = "demo"
            entry |= {
                "question": _prompt(item_stem, options),
                "options": options,
                "answer": answer,
                **common,
            }
            entries.append(entry)
    return entries


def synthesize_clip(track: str, label: str, sampling_rate: int, seconds: float = 1.0) -> np.ndarray:
    """A short stereo test sound whose pitch and texture depend on its class."""
    t = np.arange(int(seconds * sampling_rate)) / sampling_rate
    index = DEMO_CLASSES[track].index(label)
    base = 110.0 * 2 ** (index / 2) * (1 + TRACKS.index(track))
    tone = sum(np.sin(2 * math.pi * base * k * t) / k for k in range(1, 4))
    envelope = np.exp(-3 * t) * (1 + 0.5 * np.sin(2 * math.pi * (index + 1) * t))
    left = 0.3 * tone * envelope
    return np.stack([left, 0.8 * left], axis=1).astype(np.float32)


def write_demo_data(root: Path, clips_per_class: int = 2) -> tuple[Path, Path]:
    """Write question files and their audio under `root`; returns (data_dir, audio_root)."""
    data_dir, audio_root = root / "questions", root / "audio"
    data_dir.mkdir(parents=True, exist_ok=True)
    for track in TRACKS:
        entries = demo_questions(track, clips_per_class)
        write_text(data_dir / f"{TRACK_FILE_STEMS[track]}.json", json.dumps(entries, indent=1))
        class_key = "audio_animal" if track == "animal" else "audio_vocal"
        for n, entry in enumerate(entries[::4]):
            path = audio_root / canonical_relpath(track, entry["audio_filename"])
            rate = SAMPLE_RATES[n % len(SAMPLE_RATES)]
            with atomic_path(path) as tmp:
                sf.write(tmp, synthesize_clip(track, entry[class_key], rate), rate, format="WAV")
    return data_dir, audio_root


def run_demo(out: Path, clips_per_class: int = 2, models: Sequence[str] = DEMO_MODELS) -> dict:
    """Evaluate the baselines on the demo data with lm-eval; returns results per model.

    The models must be registered first (`eval_plugins.lm_eval.registration.register_all()`,
    as `aqua demo` does).
    """
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from eval_plugins.lm_eval.aqua.task_folder import task_config_dir

    data_dir, audio_root = write_demo_data(out, clips_per_class)
    metadata = {"data_dir": str(data_dir), "audio_root": str(audio_root)}
    manager = TaskManager(
        include_path=str(task_config_dir()), include_defaults=False, metadata=metadata
    )
    results = {}
    for model in models:
        output = simple_evaluate(model=model, tasks=["aqua"], task_manager=manager)
        rows = aqua_rows(output)
        results[model] = {track: rows[str(TaskName(MAIN_FAMILY, track))] for track in TRACKS}
        results[model][GROUP_ROW] = rows[MAIN_FAMILY]
    return results
