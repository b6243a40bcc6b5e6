"""The ORCA human ratings from their public home, in the layout the training configs read.

The ratings are published as the Hugging Face dataset `BUT-FIT/orca-audio-qa-annotations`
(Speech@FIT, Brno University of Technology, CC-BY-4.0): one row per rated answer, with the
columns `id, question, reference, rationale, transcript, candidate, ratings` and, besides
them, `model, rating_source, source, split, quality`. `configs/orca/*.yaml` read
`train.jsonl` and `dev.jsonl` (one item a line, those seven fields) from `data/orca-human/`.
`human_rating_splits` turns a loaded dataset into those files' items (human-rated rows only,
every row validated as `orca train` reads it), `write_human_ratings` writes them, and
`fetch_human_ratings` does both from the Hub (or any source `datasets.load_dataset` reads).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orca_judge.checkpoint import atomic_write_text
from orca_judge.data import TEXT_FIELDS, OrcaItem, refuse_duplicate_ids, validate_record
from orca_judge.errors import DataError

DATASET_ID = "BUT-FIT/orca-audio-qa-annotations"
HUMAN = "human"
COLUMNS: tuple[str, ...] = ("id", *TEXT_FIELDS, "ratings")
# The files the configs read, by the split names a dataset may use for them.
SPLIT_FILES = {"train": "train", "dev": "dev", "validation": "dev", "valid": "dev", "test": "test"}
REQUIRED_FILES = ("train", "dev")
LICENCE = (
    "Human correctness ratings (1-5) of audio-LM answers to MMAU/MMAR questions, from the "
    f"Hugging Face dataset {DATASET_ID} by Speech@FIT, Brno University of Technology, "
    "licensed CC-BY-4.0: attribute it wherever you ship it or a judge trained on it."
)


@dataclass
class HumanRatings:
    """Items per output file ("train", "dev", …) and the rows left out, counted by reason."""

    files: dict[str, list[OrcaItem]] = field(default_factory=dict)
    skipped: dict[str, int] = field(default_factory=dict)

    def counts(self) -> dict[str, int]:
        """Items per output file."""
        return {name: len(items) for name, items in self.files.items()}


def _groups(dataset: Any) -> dict[str, list[Mapping[str, Any]]]:
    """Rows per split: the dataset's `split` column when it has one, else its split names."""
    parts = dict(dataset.items()) if isinstance(dataset, Mapping) else {"train": dataset}
    groups: dict[str, list[Mapping[str, Any]]] = {}
    for name, part in parts.items():
        missing = [c for c in COLUMNS if c not in part.column_names]
        if missing:
            raise DataError(
                f"{DATASET_ID} split {name!r}: no column {', '.join(map(repr, missing))}; "
                f"expected {', '.join(COLUMNS)}, found {', '.join(part.column_names)} (the "
                "dataset's layout changed: this command cannot map it)"
            )
        for row in part:
            groups.setdefault(str(row["split"]) if "split" in row else name, []).append(row)
    return groups


def human_rating_splits(dataset: Any, rating_source: str = HUMAN) -> HumanRatings:
    """The human-rated items of a loaded dataset (a `DatasetDict` or one `Dataset`), per file.

    Rows whose `rating_source` (when the dataset has that column) is not `rating_source` are
    left out and counted; every kept row is validated as training data (DataError naming the
    split, row and field); a split of unknown name, a missing train or dev split and an id
    that occurs twice in a file are refused.
    """
    out = HumanRatings()
    for split, rows in _groups(dataset).items():
        if split not in SPLIT_FILES:
            raise DataError(
                f"{DATASET_ID}: split {split!r} is none of {', '.join(SPLIT_FILES)}; cannot "
                "tell which file its rows belong to"
            )
        items = out.files.setdefault(SPLIT_FILES[split], [])
        for index, row in enumerate(rows):
            source = row.get("rating_source", rating_source)
            if source != rating_source:
                reason = f"rating_source {source!r}"
                out.skipped[reason] = out.skipped.get(reason, 0) + 1
                continue
            record = {name: row[name] for name in COLUMNS}
            items.append(validate_record(record, f"{DATASET_ID} {split} row {index}", True, index))
    for name, items in out.files.items():
        refuse_duplicate_ids(items, Path(f"{DATASET_ID} ({name})"))
    empty = [name for name in REQUIRED_FILES if not out.files.get(name)]
    if empty:
        found = ", ".join(f"{k} {v}" for k, v in out.counts().items()) or "none"
        left_out = ", ".join(f"{n} rows with {r}" for r, n in out.skipped.items()) or "none"
        raise DataError(
            f"{DATASET_ID}: no {rating_source}-rated rows for {' and '.join(empty)} (items "
            f"found: {found}; left out: {left_out}); the configs need train and dev"
        )
    return out


def write_human_ratings(ratings: HumanRatings, output: str | Path, overwrite: bool = False) -> Path:
    """Write `<output>/<file>.jsonl` and a README naming the source and licence."""
    folder = Path(output)
    if folder.exists() and not folder.is_dir():
        raise DataError(f"{folder}: exists and is not a folder")
    targets = [folder / f"{name}.jsonl" for name in ratings.files]
    present = [p.name for p in targets if p.exists()]
    if present and not overwrite:
        raise DataError(
            f"{folder}: already holds {', '.join(present)}; pass --overwrite to replace them"
        )
    folder.mkdir(parents=True, exist_ok=True)
    for path, items in zip(targets, ratings.files.values(), strict=True):
        atomic_write_text(
            path, "".join(json.dumps(i.as_dict(), ensure_ascii=False) + "\n" for i in items)
        )
    counts = ", ".join(f"{name}.jsonl {n} items" for name, n in ratings.counts().items())
    atomic_write_text(folder / "README.md", f"# ORCA human ratings\n\n{LICENCE}\n\n{counts}.\n")
    return folder


def fetch_human_ratings(
    output: str | Path,
    *,
    source: str = DATASET_ID,
    revision: str | None = None,
    rating_source: str = HUMAN,
    overwrite: bool = False,
) -> HumanRatings:
    """Load the dataset with `datasets` (the Hub id by default, or a local copy) and write it."""
    import datasets

    try:
        dataset = datasets.load_dataset(source, revision=revision)
    except (OSError, ValueError, ConnectionError) as err:
        raise DataError(f"cannot load {source!r} with datasets: {err}") from None
    ratings = human_rating_splits(dataset, rating_source)
    write_human_ratings(ratings, output, overwrite)
    return ratings
