"""The held-out split of a curriculum: dev questions no stage trains on, kept for the final report.

One split for the whole curriculum, made once, after the data is loaded: its questions leave
every stage's dev set, so no early stopping or threshold tuning ever sees them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from orca_judge.data import OrcaItem, normalize_question, question_disjoint_split


def split_heldout(
    train_sets: Sequence[Sequence[OrcaItem]],
    dev_sets: Sequence[Sequence[OrcaItem]],
    fraction: float,
    seed: int = 0,
) -> tuple[list[list[OrcaItem]], list[OrcaItem]]:
    """One held-out split for a whole curriculum: (each stage's dev without it, held-out items).

    The held-out items are `fraction` of the last dev set's questions that occur in no
    stage's training data; their questions are removed from every stage's dev set, so no
    early stopping or threshold tuning ever sees them.
    """
    if not dev_sets or len(train_sets) != len(dev_sets):
        raise ValueError("split_heldout needs one train and one dev set per stage")
    seen = {it.question for items in train_sets for it in items}
    _, heldout = question_disjoint_split(dev_sets[-1], fraction, seed, exclude_questions=seen)
    held = {normalize_question(it.question) for it in heldout}
    devs = [
        [it for it in items if normalize_question(it.question) not in held] for items in dev_sets
    ]
    return devs, heldout


def heldout_fraction_problem(value: float, label: str = "heldout_fraction") -> str | None:
    """Why `value` cannot be a held-out fraction (0 <= it < 1), or None; names it as `label`."""
    # 1.5 (or nan) would otherwise surface later as "dev set is empty", and 1 would hold
    # out every dev question, leaving no dev set to stop on.
    if 0 <= value < 1:
        return None
    return f"{label}: expected a share of the dev questions with 0 <= {label} < 1, got {value!r}"


@dataclass(frozen=True)
class HeldOutSplit:
    """Each stage's dev set without the held-out questions, the held-out items, the record."""

    devs: list[list[OrcaItem]]
    items: list[OrcaItem] = field(default_factory=list)
    record: dict[str, Any] = field(default_factory=dict)  # what each stage's data records


def hold_out(
    train_sets: Sequence[Sequence[OrcaItem]],
    dev_sets: Sequence[Sequence[OrcaItem]],
    fraction: float = 0.0,
    seed: int = 0,
) -> HeldOutSplit:
    """The split as `orca train --heldout-fraction F --split-seed S` makes it (none at 0)."""
    if problem := heldout_fraction_problem(fraction):
        raise ValueError(problem)
    devs, items = [list(d) for d in dev_sets], []
    if fraction > 0:
        devs, items = split_heldout(train_sets, dev_sets, fraction, seed)
    record: dict[str, Any] = {"heldout_fraction": fraction, "split_seed": seed}
    if items:
        record["heldout_items"] = len(items)
        record["heldout_questions"] = len({normalize_question(it.question) for it in items})
    return HeldOutSplit(devs, items, record)
