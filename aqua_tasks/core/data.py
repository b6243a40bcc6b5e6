"""Load and validate AQUA-Bench question files: the released tracks and those aqua build writes."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aqua_tasks.core.settings_place import settings_example
from aqua_tasks.errors import AquaDataError
from eval_common.inputs import read_json

# The three tracks the authors released; BUILT_TRACKS are built locally by `aqua build`
# (MMAU, from MMAU test-mini) and are read, scored and reported like them.
TRACKS: tuple[str, ...] = ("animal", "music", "vocal")
BUILT_TRACKS: tuple[str, ...] = ("mmau",)
KNOWN_TRACKS: tuple[str, ...] = TRACKS + BUILT_TRACKS
TYPES: tuple[str, ...] = ("Solvable", "AAD", "IASD", "IAQD")
UNANSWERABLE_TYPES: tuple[str, ...] = ("AAD", "IASD", "IAQD")

TRACK_FILE_STEMS: dict[str, str] = {
    "animal": "AQUA-Bench-Animal-Sounds-Track",
    "music": "AQUA-Bench-Music-Instruments-Sounds-Track",
    "vocal": "AQUA-Bench-Vocal-Sounds-Track",
}
BUILT_FILE_STEMS: dict[str, str] = {"mmau": "AQUA-Bench-MMAU-Track"}
VARIANT_SUFFIXES: dict[str, str] = {
    "main": "",
    "option_design1": "-Option-Design1",
    "option_design2": "-Option-Design2",
    "uncertainty": "-Uncertainty",
}
# The two rejection option strings of each released design: (absent answer, unanswerable).
REJECTION_STRINGS: dict[str, tuple[str, str]] = {
    "main": ("None of the above", "Unanswerable"),
    "option_design1": ("No correct answer", "Cannot be determined from the given information"),
    "option_design2": ("All answers are incorrect", "Insufficient information to answer"),
    "uncertainty": ("None of the above", "Unanswerable"),
}
# Where the true class of a clip is stored: Music reuses the Vocal key in the release.
CLASS_KEYS: dict[str, str] = {
    "animal": "audio_animal",
    "music": "audio_vocal",
    "vocal": "audio_vocal",
}

# Built tracks have the main design only (aqua build writes no option-design copies).
BUILT_HELP: dict[str, str] = {
    "mmau": (
        "Build it from MMAU test-mini with `aqua build --source mmau --input "
        "mmau-test-mini.json --output DIR` and pass DIR as data_dir (docs/build.md)."
    ),
}


def data_help() -> str:
    """How to get the released files and name their folder, in the running harness's terms."""
    example = settings_example(
        '{"data_dir": "/path/to/AQUA-Bench", "audio_root": "/path/to/audio"}'
    )
    return (
        "Download the released question files (AQUA-Bench-*-Track*.json) from the AQUA-Bench "
        f"authors' public repository and pass their folder as data_dir, e.g. {example}."
    )


REQUIRED_KEYS: tuple[str, ...] = ("id", "type", "question", "options", "answer", "audio_filename")


@dataclass(frozen=True)
class AquaItem:
    """One question of AQUA-Bench, validated, with its clip identity."""

    id: int
    track: str
    variant: str
    type: str
    subtype: str
    question: str
    options: tuple[str, ...]
    answer: str
    answer_index: int
    audio_filename: str
    true_class: str
    flags: tuple[str, ...] = field(default=())

    @property
    def clip_key(self) -> str:
        """Identity of the clip the four items of a group share (never `audio_id`)."""
        return f"{self.track}|{self.variant}|{self.audio_filename}"

    @property
    def rejection_strings(self) -> tuple[str, str]:
        """The rejection option strings of this item's design."""
        return REJECTION_STRINGS[self.variant]


def check_track(track: str) -> str:
    """Validate a track name (released or built)."""
    if track not in KNOWN_TRACKS:
        raise AquaDataError(f"unknown track {track!r}; expected one of {', '.join(KNOWN_TRACKS)}")
    return track


def file_stem(track: str) -> str:
    """The question file's name (without `.json`) of a released or built track."""
    check_track(track)
    return TRACK_FILE_STEMS.get(track) or BUILT_FILE_STEMS[track]


def check_variant(variant: str) -> str:
    """Validate a variant name."""
    if variant not in VARIANT_SUFFIXES:
        raise AquaDataError(
            f"unknown variant {variant!r}; expected one of {', '.join(VARIANT_SUFFIXES)}"
        )
    return variant


def track_file(data_dir: str | Path, track: str, variant: str = "main") -> Path:
    """Path of the released JSON file of a track and variant under `data_dir`."""
    check_track(track)
    check_variant(variant)
    if track in BUILT_TRACKS and variant != "main":
        raise AquaDataError(f"the {track} track has the main variant only, not {variant!r}")
    if data_dir is None or str(data_dir) == "":
        raise AquaDataError(f"no data_dir given. {data_help()}")
    root = Path(data_dir).expanduser()
    if not root.is_dir():
        raise AquaDataError(f"data_dir {str(root)!r} is not a directory. {data_help()}")
    path = root / f"{file_stem(track)}{VARIANT_SUFFIXES[variant]}.json"
    if not path.is_file():
        hint = BUILT_HELP.get(track) or data_help()
        raise AquaDataError(f"{path.name} not found in data_dir {str(root)!r}. {hint}")
    return path


def has_track_file(data_dir: object, track: str, variant: str = "main") -> bool:
    """Whether `data_dir` holds the question file of a track (False for no or a bad folder)."""
    try:
        track_file(str(data_dir) if data_dir else "", track, variant)
    except AquaDataError:
        return False
    return True


def _normalise(text: str) -> str:
    return re.sub(r"[\s_]+", " ", text).strip().lower()


def item_flags(
    track: str, item_type: str, options: Sequence[str], true_class: str
) -> tuple[str, ...]:
    """Known defects of a released item (kept as released; flagged for per-item output)."""
    flags = []
    normalised = [_normalise(o) for o in options]
    if len(set(normalised)) < len(normalised):
        flags.append("duplicate_options")
    if item_type == "IASD" and true_class and _normalise(true_class) in normalised:
        flags.append("true_class_listed")
    return tuple(flags)


# A released question lists its options inline as `(a) X (b) Y …`; the labels are read to say
# which one disagrees with `options` (the model reads the question, scoring the list).
INLINE_LABEL = re.compile(r"\(([a-z])\)\s*")
OPTION_LETTERS = "abcdefghijklmnopqrstuvwxyz"


def _squeezed(text: str) -> str:
    return " ".join(text.split())


def inline_options_problem(question: str, options: Sequence[str]) -> str | None:
    """How a question's inline `(a) …` options disagree with its `options` list, or None."""
    listed = " ".join(f"({OPTION_LETTERS[i]}) {o}" for i, o in enumerate(options))
    if _squeezed(listed) in _squeezed(question):
        return None
    first_line = question.split("\n", 1)[0]
    parts = INLINE_LABEL.split(first_line)
    inline = list(zip(parts[1::2], (p.strip() for p in parts[2::2]), strict=True))
    if not inline:
        return "lists no inline options '(a) …'; the released layout lists every option inline"
    for index, (label, text) in enumerate(inline):
        expected = OPTION_LETTERS[index] if index < len(OPTION_LETTERS) else "?"
        if label != expected:
            return f"inline label ({label}) stands where ({expected}) belongs"
        if index >= len(options):
            return f"lists {len(inline)} inline options but 'options' has {len(options)}"
        if _squeezed(text) != _squeezed(options[index]):
            return f"inline option ({label}) is {text!r} but options[{index}] is {options[index]!r}"
    return f"lists {len(inline)} inline options but 'options' has {len(options)}"


def parse_item(raw: object, *, track: str, variant: str, where: str) -> AquaItem:
    """Validate one released entry; errors name `where` (file and position) and the field."""
    if not isinstance(raw, dict):
        raise AquaDataError(f"{where}: expected a JSON object, got {type(raw).__name__}")
    missing = [k for k in REQUIRED_KEYS if k not in raw]
    if missing:
        raise AquaDataError(f"{where}: missing key(s) {', '.join(missing)}")
    item_type = raw["type"]
    if item_type not in TYPES:
        raise AquaDataError(f"{where}: field 'type' is {item_type!r}; expected one of {TYPES}")
    options = raw["options"]
    if (
        not isinstance(options, list)
        or not 2 <= len(options) <= 26
        or not all(isinstance(o, str) for o in options)
    ):
        raise AquaDataError(f"{where}: field 'options' must be a list of 2-26 strings")
    answer = raw["answer"]
    if not isinstance(answer, str) or answer not in options:
        raise AquaDataError(f"{where}: field 'answer' {answer!r} is not one of its options")
    for key in ("question", "audio_filename"):
        if not isinstance(raw[key], str) or not raw[key].strip():
            raise AquaDataError(f"{where}: field {key!r} must be a non-empty string")
    item_id = raw["id"]
    # int() would read 0.7 as 0 and "3" as 3: an id is a JSON integer or the file is refused.
    if not isinstance(item_id, int) or isinstance(item_id, bool):
        raise AquaDataError(f"{where}: field 'id' must be an integer, got {item_id!r}")
    problem = inline_options_problem(raw["question"], options)
    if problem is not None:
        raise AquaDataError(f"{where} (id {item_id}): field 'question' {problem}")
    # A built track has no class key: its IASD items are checked by aqua build instead.
    true_class = str(raw.get(CLASS_KEYS.get(track, "")) or "")
    return AquaItem(
        id=item_id,
        track=track,
        variant=variant,
        type=item_type,
        subtype=str(raw.get("subtype") or ""),
        question=raw["question"],
        options=tuple(options),
        answer=answer,
        answer_index=options.index(answer),
        audio_filename=raw["audio_filename"],
        true_class=true_class,
        flags=item_flags(track, item_type, options, true_class),
    )


def parse_items(entries: object, *, track: str, variant: str, source: str) -> list[AquaItem]:
    """Validate a released list of entries: unique ids, four types per clip."""
    if not isinstance(entries, list):
        raise AquaDataError(f"{source}: expected a JSON list of questions")
    if not entries:
        # An empty track would score as n = 0 everywhere (or crash the harness later).
        raise AquaDataError(f"{source}: holds no questions (an empty list); expected the entries")
    items = [
        parse_item(raw, track=track, variant=variant, where=f"{source}: entry {i}")
        for i, raw in enumerate(entries)
    ]
    seen: dict[int, int] = {}
    for i, item in enumerate(items):
        if item.id in seen:
            raise AquaDataError(
                f"{source}: entry {i}: duplicate id {item.id} (first at entry {seen[item.id]})"
            )
        seen[item.id] = i
    per_clip: dict[str, list[str]] = {}
    for item in items:
        per_clip.setdefault(item.clip_key, []).append(item.type)
    for clip, types in per_clip.items():
        if len(types) != len(set(types)):
            raise AquaDataError(
                f"{source}: clip {clip.split('|', 2)[2]!r} has repeated types {sorted(types)}"
            )
    return items


def load_json_file(path: str | Path) -> object:
    """Read a JSON file; errors name the file and the position of a syntax error."""
    path = Path(path)
    try:
        return read_json(path, AquaDataError)
    except FileNotFoundError:
        raise AquaDataError(f"{path}: file not found") from None


def load_items(data_dir: str | Path, track: str, variant: str = "main") -> list[AquaItem]:
    """Load and validate all items of one released track file."""
    path = track_file(data_dir, track, variant)
    return parse_items(load_json_file(path), track=track, variant=variant, source=str(path))


def detect_variant(options_lists: Sequence[Sequence[str]], name: str = "") -> str:
    """Guess the design from a file name, else from the rejection strings (main if unsure)."""
    lowered = name.lower()
    for variant, suffix in VARIANT_SUFFIXES.items():
        if suffix and suffix.lower() + ".json" in lowered:
            return variant
    present = {o for options in options_lists for o in options}
    for variant in ("option_design1", "option_design2"):
        if any(s in present for s in REJECTION_STRINGS[variant]):
            return variant
    return "main"


def name_track(name: str) -> str | None:
    """The track a file name names (a track file's stem or `aqua_<track>`), or None."""
    lowered = name.lower()
    for track, stem in (TRACK_FILE_STEMS | BUILT_FILE_STEMS).items():
        if stem.lower() in lowered or f"aqua_{track}" in lowered:
            return track
    return None


def entry_track(entry: object) -> str | None:
    """The track one released entry's audio path or class key tells, or None."""
    if not isinstance(entry, dict):
        return None
    path = str(entry.get("audio_filename", "")).replace("\\", "/").lower()
    if "esc-50" in path or "audio_animal" in entry:
        return "animal"
    if "music_dataset" in path:
        return "music"
    if "vocalsound" in path or "audio_16k" in path:
        return "vocal"
    if "test-mini-audios/" in path:  # MMAU's own `audio_id`, kept by aqua build
        return "mmau"
    return None


def detect_track(name: str, entries: Sequence[dict]) -> str | None:
    """Guess the track from a file name or the entries' audio paths and class keys."""
    return name_track(name) or next(
        (t for t in map(entry_track, entries[:8]) if t is not None), None
    )
