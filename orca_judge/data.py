"""Loading and validating rated items (JSONL, JSON, `datasets`), the length filter and splits."""

from __future__ import annotations

import hashlib
import json
import math
import random
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_common.inputs import iter_json_lines, lone_surrogate_at, read_json
from orca_judge.errors import DataError
from orca_judge.template import format_text

TEXT_FIELDS = ("question", "reference", "rationale", "transcript", "candidate")
REQUIRED_FIELDS = ("question", "reference", "candidate")


@dataclass(frozen=True)
class OrcaItem:
    """One answer to judge, with its human ratings when known."""

    id: str
    question: str
    reference: str
    candidate: str
    rationale: str = ""
    transcript: str = ""
    ratings: tuple[int, ...] | None = None

    def as_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "question": self.question,
            "reference": self.reference,
            "rationale": self.rationale,
            "transcript": self.transcript,
            "candidate": self.candidate,
            "ratings": None if self.ratings is None else list(self.ratings),
        }

    @property
    def human_mean_unit(self) -> float | None:
        """Mean rating on [0, 1]."""
        if not self.ratings:
            return None
        return (sum(self.ratings) / len(self.ratings) - 1.0) / 4.0

    @property
    def human_var_unit(self) -> float | None:
        """Sample variance (ddof=1, 0 for one rating) on [0, 1]."""
        if not self.ratings:
            return None
        n = len(self.ratings)
        if n == 1:
            return 0.0
        ys = [(r - 1) / 4 for r in self.ratings]
        m = sum(ys) / n
        return sum((y - m) ** 2 for y in ys) / (n - 1)


def validate_record(
    record: Mapping[str, Any], where: str, require_ratings: bool, index: int
) -> OrcaItem:
    """Turn one raw record into an OrcaItem or raise DataError naming `where` and the field."""
    if not isinstance(record, Mapping):
        raise DataError(f"{where}: expected a JSON object, got {type(record).__name__}")
    values: dict[str, str] = {}
    for name in TEXT_FIELDS:
        value = record.get(name)
        if value is None:
            if name in REQUIRED_FIELDS:
                raise DataError(f"{where}: missing required field {name!r}")
            value = ""
        if not isinstance(value, str):
            raise DataError(f"{where}: field {name!r} must be a string, got {type(value).__name__}")
        if (at := lone_surrogate_at(value)) is not None:
            # json.loads accepts "\ud800" alone; no tokenizer or UTF-8 file can hold it.
            raise DataError(
                f"{where}: field {name!r} (id {record.get('id', index)!r}) has a lone surrogate "
                f"{value[at]!r} at character {at}; expected Unicode text (an escaped character "
                "outside the BMP needs both halves, e.g. \\ud83d\\ude00)"
            )
        values[name] = value
    ratings = record.get("ratings")
    if ratings is None:
        if require_ratings:
            state = "null" if "ratings" in record else "missing"
            raise DataError(f"{where}: field 'ratings' is {state}; training needs 1..5 ratings")
        parsed = None
    else:
        if isinstance(ratings, (int, float)) and not isinstance(ratings, bool):
            ratings = [ratings]
        if not isinstance(ratings, Sequence) or isinstance(ratings, str) or not ratings:
            raise DataError(
                f"{where}: field 'ratings' must be a non-empty list of 1..5, got {ratings!r}"
            )
        parsed_list = []
        for r in ratings:
            ok = isinstance(r, (int, float)) and not isinstance(r, bool) and float(r).is_integer()
            if not ok or not 1 <= r <= 5:
                raise DataError(
                    f"{where}: field 'ratings' has {r!r}; ratings must be integers 1..5"
                )
            parsed_list.append(int(r))
        parsed = tuple(parsed_list)
    item_id = record.get("id")
    return OrcaItem(
        id=str(item_id) if item_id is not None else str(index), ratings=parsed, **values
    )


def load_items(
    source: str | Path | Iterable[Mapping[str, Any]], *, require_ratings: bool = False
) -> list[OrcaItem]:
    """Load items from a .jsonl/.json file, a `datasets.Dataset`, or an iterable of dicts."""
    if isinstance(source, (str, Path)):
        path = Path(source)
        if not path.is_file():
            raise DataError(f"{path}: no such file")
        if path.suffix == ".jsonl":
            items = [
                validate_record(record, f"{path}:{lineno}", require_ratings, i)
                for i, (lineno, record) in enumerate(iter_json_lines(path, DataError))
            ]
            return refuse_duplicate_ids(items, path)
        data = read_json(path, DataError)
        if isinstance(data, Mapping):
            data = data.get("items", data.get("data"))
        if not isinstance(data, list):
            raise DataError(f"{path}: expected a list of items (or {{'items': [...]}})")
        items = [
            validate_record(r, f"{path}: item {i}", require_ratings, i) for i, r in enumerate(data)
        ]
        return refuse_duplicate_ids(items, path)
    return [validate_record(r, f"item {i}", require_ratings, i) for i, r in enumerate(source)]


def refuse_duplicate_ids(items: list[OrcaItem], path: Path) -> list[OrcaItem]:
    """The items of a file, refused when an id occurs twice.

    Predictions are joined to items by id (`aqua report --orca-predictions`, calibration):
    with a repeated id the join would pair predictions with the wrong items, silently.
    """
    counts = Counter(it.id for it in items)
    repeated = sorted(item_id for item_id, n in counts.items() if n > 1)
    if repeated:
        shown = ", ".join(repr(i) for i in repeated[:5])
        more = f" and {len(repeated) - 5} more" if len(repeated) > 5 else ""
        raise DataError(f"{path}: item ids occur more than once: {shown}{more}; ids must be unique")
    return items


def filter_by_length(
    items: Sequence[OrcaItem], max_chars: int | None, **template_opts: Any
) -> tuple[list[OrcaItem], int]:
    """Drop items whose formatted text exceeds max_chars; returns (kept, number removed)."""
    if max_chars is None:
        return list(items), 0
    kept = [it for it in items if len(format_text(it.as_dict(), **template_opts)) <= max_chars]
    return kept, len(items) - len(kept)


def normalize_question(question: str) -> str:
    """Case-, whitespace- and punctuation-insensitive form of a question, for matching."""
    return " ".join(re.sub(r"[^\w\s]", " ", question.casefold()).split())


def question_disjoint_split(
    items: Sequence[OrcaItem], fraction: float, seed: int = 0, exclude_questions: Iterable[str] = ()
) -> tuple[list[OrcaItem], list[OrcaItem]]:
    """Split by question into (a, b) with about `fraction` of the questions in b.

    Questions match after normalize_question. Questions listed in exclude_questions (e.g.
    seen in training) always go to a, so b contains only unseen questions.
    """
    excluded = {normalize_question(q) for q in exclude_questions}
    spellings: dict[str, str] = {}
    for it in items:
        key = normalize_question(it.question)
        if key not in excluded:
            spellings[key] = min(spellings.get(key, it.question), it.question)
    # Ordered by an original spelling, so data without variant spellings splits as before.
    questions = sorted(spellings, key=lambda k: (spellings[k], k))
    random.Random(seed).shuffle(questions)
    held = set(questions[: math.ceil(fraction * len(questions))])
    a = [it for it in items if normalize_question(it.question) not in held]
    b = [it for it in items if normalize_question(it.question) in held]
    return a, b


def items_fingerprint(items: Sequence[OrcaItem]) -> str:
    """sha256 (first 16 hex digits) of the items' content, in order."""
    digest = hashlib.sha256()
    for it in items:
        digest.update(json.dumps(it.as_dict(), sort_keys=True).encode())
        digest.update(b"\n")
    return digest.hexdigest()[:16]


def file_sha256(path: str | Path) -> str:
    """sha256 (first 16 hex digits) of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def undefined_correlation_reason(items: Sequence[OrcaItem]) -> str | None:
    """Why Spearman rho against these items' mean ratings is undefined; None when it is defined."""
    means = {it.human_mean_unit for it in items if it.ratings}
    if len(items) < 2:
        return f"{len(items)} item; rho needs at least two"
    if len(means) < 2:
        rating = 1 + 4 * next(iter(means))
        return f"all {len(items)} items have the same mean rating {rating:g}"
    return None
