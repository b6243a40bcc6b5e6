"""Read a multiple-choice audio set: MMAU's JSON, JSON/JSONL with named fields, or a HF dataset."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqua_tasks.build.text import LETTERS
from aqua_tasks.errors import BuildError
from eval_common.inputs import iter_json_lines, read_json

ANSWER_FORMATS = ("text", "letter", "index")


@dataclass(frozen=True)
class FieldMap:
    """Which source field holds each part of an item, and how the answer is written."""

    id: str = "id"
    audio: str = "audio_id"
    question: str = "question"
    choices: str = "choices"
    answer: str = "answer"
    answer_format: str = "text"  # text of the choice, its letter (A, b, (c)), or 0-based index

    def __post_init__(self) -> None:
        if self.answer_format not in ANSWER_FORMATS:
            raise BuildError(
                f"answer_format={self.answer_format!r}: expected one of {', '.join(ANSWER_FORMATS)}"
            )

    @property
    def core(self) -> tuple[str, ...]:
        """The mapped field names; every other field of an item is kept as metadata."""
        return (self.id, self.audio, self.question, self.choices, self.answer)


MMAU_FIELDS = FieldMap()


@dataclass(frozen=True)
class SourceItem:
    """One source question as read: no repair yet (that is the builder's job, and counted)."""

    position: int  # 0-based place in the source
    id: str
    audio: str  # the source's own audio path or id, kept as `audio_filename`
    question: str
    choices: tuple[str, ...]
    answer: str  # the answer as text ("" when a letter or index pointed nowhere)
    metadata: Mapping[str, Any] = field(default_factory=dict)


def _answer_text(raw: object, choices: Sequence[str], fields: FieldMap) -> str:
    if fields.answer_format == "text":
        return raw if isinstance(raw, str) else ""
    if fields.answer_format == "index":
        ok = isinstance(raw, int) and not isinstance(raw, bool) and 0 <= raw < len(choices)
        return choices[raw] if ok else ""
    letter = str(raw).strip().strip("()").strip().lower()
    index = LETTERS.find(letter) if len(letter) == 1 else -1
    return choices[index] if 0 <= index < len(choices) else ""


def parse_source_item(raw: object, position: int, fields: FieldMap, where: str) -> SourceItem:
    """One source record as a SourceItem; BuildError naming `where` and the field if malformed."""
    if not isinstance(raw, Mapping):
        raise BuildError(f"{where}: item {position}: expected a JSON object")
    missing = [name for name in fields.core if name not in raw]
    if missing:
        raise BuildError(f"{where}: item {position}: missing field(s) {', '.join(missing)}")
    choices = raw[fields.choices]
    if not isinstance(choices, list) or not all(isinstance(c, str) for c in choices):
        raise BuildError(
            f"{where}: item {position}: field {fields.choices!r} must be a list of strings"
        )
    for name in (fields.question, fields.audio):
        if not isinstance(raw[name], str) or not raw[name].strip():
            raise BuildError(f"{where}: item {position}: field {name!r} must be a non-empty string")
    metadata = {k: v for k, v in raw.items() if k not in fields.core}
    return SourceItem(
        position=position,
        id=str(raw[fields.id]),
        audio=raw[fields.audio],
        question=raw[fields.question],
        choices=tuple(choices),
        answer=_answer_text(raw[fields.answer], choices, fields),
        metadata=metadata,
    )


def read_records(path: str | Path) -> list[Any]:
    """The records of a JSON list or a JSONL file; BuildError naming the file and line."""
    path = Path(path)
    try:
        if path.suffix.lower() == ".jsonl":
            return [record for _, record in iter_json_lines(path, BuildError)]
        data = read_json(path, BuildError)
    except FileNotFoundError:
        raise BuildError(f"{path}: no such file") from None
    if not isinstance(data, list):
        raise BuildError(f"{path}: expected a JSON list of items (or a .jsonl file)")
    return data


def parse_source(records: Iterable[object], fields: FieldMap, where: str) -> list[SourceItem]:
    """Every record as a SourceItem; ids must be unique (clips are told apart by them)."""
    items = [parse_source_item(r, i, fields, where) for i, r in enumerate(records)]
    seen: dict[str, int] = {}
    for item in items:
        if item.id in seen:
            raise BuildError(
                f"{where}: item {item.position}: duplicate id {item.id!r} "
                f"(first at item {seen[item.id]})"
            )
        seen[item.id] = item.position
    if not items:
        raise BuildError(f"{where}: no items")
    return items


def read_source(path: str | Path, fields: FieldMap = MMAU_FIELDS) -> list[SourceItem]:
    """The items of a JSON or JSONL multiple-choice file (MMAU's field names by default)."""
    return parse_source(read_records(path), fields, str(path))


def read_hf_dataset(
    name: str, split: str, fields: FieldMap, audio_column: str | None = None
) -> list[SourceItem]:
    """The items of a Hugging Face dataset (a saved folder or a hub id; `datasets` needed)."""
    import datasets  # lazily: only this source needs it

    path = Path(name)
    data = datasets.load_from_disk(str(path)) if path.is_dir() else datasets.load_dataset(name)
    if isinstance(data, datasets.DatasetDict):
        if split not in data:
            raise BuildError(f"{name}: no split {split!r}; it has {', '.join(data)}")
        data = data[split]
    if audio_column:  # keep the path, never decode the audio while building questions
        data = data.cast_column(audio_column, datasets.Audio(decode=False))
    records = []
    for row in data:
        if audio_column and isinstance(row.get(audio_column), Mapping):
            row = {**row, audio_column: row[audio_column].get("path") or ""}
        records.append(row)
    return parse_source(records, fields, f"{name}[{split}]")
