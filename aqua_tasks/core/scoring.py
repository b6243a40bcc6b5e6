"""Per-item verdicts and the AQUA protocol metrics (accuracy and conditional accuracy)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import NamedTuple

import numpy as np

from aqua_tasks.core.data import TYPES, UNANSWERABLE_TYPES, AquaItem
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, EXTRACTOR_ALIASES, extract
from aqua_tasks.core.extract.fallback import FALLBACK_EXTRACTOR, apply_reading, needs_fallback

RATE_METRICS: tuple[str, ...] = (
    "acc",
    *(f"acc_{t.lower()}" for t in UNANSWERABLE_TYPES),
    *(f"ca_{t.lower()}" for t in UNANSWERABLE_TYPES),
    *(f"joint_{t.lower()}" for t in UNANSWERABLE_TYPES),
    "unparsed_rate",
)
COUNT_METRICS: tuple[str, ...] = (
    *(f"n_ca_{t.lower()}" for t in UNANSWERABLE_TYPES),
    "n_items",
    "n_solvable",
    "n_unconditioned",
    "n_excluded",
)
ALL_METRICS: tuple[str, ...] = RATE_METRICS + COUNT_METRICS
# Counts of an `aqua-rules+llm` run only: replies the LLM fallback read into an answer, and
# replies it failed to read (left unparsed). Their per-item value is the fallback's reading.
FALLBACK_METRICS: tuple[str, ...] = ("n_fallback", "n_fallback_failed")
LOWER_IS_BETTER: frozenset[str] = frozenset({"unparsed_rate"})


@dataclass(frozen=True)
class Verdict:
    """The scored answer of one item, traceable to its id and its reason."""

    id: int
    track: str
    variant: str
    type: str
    subtype: str
    clip: str
    extractor: str
    choice: str | None
    chosen_option: str | None
    gold: str
    correct: bool
    parsed: bool
    reason: str
    flags: tuple[str, ...]
    excluded: bool
    read_by: str = "rules"  # "fallback": the LLM fallback read what the rules left unparsed

    def to_record(self) -> dict:
        """JSON-ready row for per-item output."""
        row = asdict(self)
        row["flags"] = list(self.flags)
        return row


def score_reply(
    item: AquaItem,
    reply: str | None,
    *,
    extractor: str = DEFAULT_EXTRACTOR,
    exclude_defective: bool = False,
    fallback: int | None = None,
) -> Verdict:
    """Extract the chosen option from a reply and judge it against the released gold.

    `fallback` is what the LLM fallback read (a code of `extract.fallback`) for the extractor
    `aqua-rules+llm`; ValueError when that extractor leaves a reply unparsed without one.
    """
    result = extract(
        reply or "", item.options, extractor=extractor, rejection_strings=item.rejection_strings
    )
    read_by = "rules"
    if extractor == FALLBACK_EXTRACTOR and needs_fallback(reply or "", result):
        if fallback is None:
            raise ValueError(
                f"item {item.id}: the rules left the reply unparsed and no fallback reading "
                "was recorded (the LLM fallback reads replies during the lm-eval run)"
            )
        result, read_by = apply_reading(result, fallback, item.options, item.rejection_strings)
    chosen = item.options[result.choice] if result.choice is not None else None
    # Gold is the option text: with duplicated option strings any copy of it is right.
    correct = chosen is not None and chosen == item.answer
    return Verdict(
        id=item.id,
        track=item.track,
        variant=item.variant,
        type=item.type,
        subtype=item.subtype,
        clip=item.audio_filename,
        # Rows name the extractor that scored them, also for runs recorded under an alias.
        extractor=EXTRACTOR_ALIASES.get(extractor, extractor),
        choice=result.letter,
        chosen_option=chosen,
        gold=f"({chr(ord('A') + item.answer_index)}) {item.answer}",
        correct=correct,
        parsed=result.parsed,
        reason=result.reason,
        flags=item.flags,
        excluded=exclude_defective and bool(item.flags),
        read_by=read_by,
    )


def metric_value(verdict: Verdict) -> dict:
    """The per-item dict with its id (run comparisons pair items by it); `summarize` reads it."""
    return {
        "id": verdict.id,
        "clip": verdict.clip,
        "type": verdict.type,
        "correct": verdict.correct,
        "parsed": verdict.parsed,
        "excluded": verdict.excluded,
    }


class ItemOutcome(NamedTuple):
    """What the AQUA metrics need of one scored item.

    `clip` tells the item's clip apart from the others of its run: the file name in verdicts
    and older logged values, the clip index (see `pack_outcome`) in a packed value.
    """

    clip: str | int
    type: str
    correct: bool
    parsed: bool
    excluded: bool


def item_outcome(verdict: Verdict) -> ItemOutcome:
    """The per-item outcome every AQUA metric aggregates over, its clip named by file."""
    return ItemOutcome(
        verdict.clip, verdict.type, verdict.correct, verdict.parsed, verdict.excluded
    )


# The per-item value lm-eval logs under each of the 18 AQUA metrics of a sample line is one
# integer: clip_index << 5 | type code << 3 | correct << 2 | parsed << 1 | excluded, the type
# code being the type's position in TYPES. lm-eval writes the value 18 times a line, so a
# track of 1440 items costs ~0.5 MB instead of ~2.3 MB with the clip's name. The clip index
# is exact (assigned per released file by `docs.clip_indices`), never a hash that could
# silently pair two clips.
_FLAG_BITS = 3
_TYPE_BITS = 2
_TYPE_MASK = (1 << _TYPE_BITS) - 1


def pack_outcome(clip_index: int, outcome: ItemOutcome) -> int:
    """The logged per-item integer of an outcome whose clip has index `clip_index`."""
    if isinstance(clip_index, bool) or not isinstance(clip_index, int) or clip_index < 0:
        raise ValueError(f"clip_index must be an integer >= 0, got {clip_index!r}")
    if outcome.type not in TYPES:
        raise ValueError(f"outcome type must be one of {TYPES}, got {outcome.type!r}")
    flags = int(outcome.correct) << 2 | int(outcome.parsed) << 1 | int(outcome.excluded)
    return (clip_index << _TYPE_BITS | TYPES.index(outcome.type)) << _FLAG_BITS | flags


def unpack_outcome(value: int) -> ItemOutcome:
    """The outcome a `pack_outcome` integer holds; its clip is the clip index."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"a packed AQUA outcome is an integer >= 0, got {value!r}")
    clip_and_type = value >> _FLAG_BITS
    return ItemOutcome(
        clip_and_type >> _TYPE_BITS,
        TYPES[clip_and_type & _TYPE_MASK],
        bool(value & 4),
        bool(value & 2),
        bool(value & 1),
    )


def as_outcome(value: Mapping | Sequence | int) -> ItemOutcome:
    """One per-item value in any logged layout: packed integer, 5-entry list or dict.

    Runs written before the packed integer logged the 5-entry [clip, type, correct, parsed,
    excluded] list, and before that a `metric_value` dict.
    """
    if isinstance(value, ItemOutcome):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return unpack_outcome(value)
    if isinstance(value, Mapping):
        return ItemOutcome(
            str(value["clip"]),
            str(value["type"]),
            bool(value["correct"]),
            bool(value["parsed"]),
            bool(value["excluded"]),
        )
    if isinstance(value, Sequence) and not isinstance(value, str) and len(value) == 5:
        clip, item_type, correct, parsed, excluded = value
        return ItemOutcome(str(clip), str(item_type), bool(correct), bool(parsed), bool(excluded))
    raise ValueError(
        f"a per-item AQUA value must be a packed integer (see pack_outcome), a 5-entry "
        f"[clip, type, correct, parsed, excluded] list or a dict with those keys, got {value!r}"
    )


@dataclass(frozen=True, eq=False)
class ConditionedItems:
    """One unanswerable type's items whose clip has a Solvable answer to condition on.

    Entry i of each field is the same item (one per clip in the released data), in the
    order the items came in: its clip, that clip's Solvable answer, and its own answer.
    """

    clips: tuple[str | int, ...]
    solvable_right: np.ndarray
    variant_right: np.ndarray


@dataclass(frozen=True, eq=False)
class ClipOutcomes:
    """A run's kept items arranged for the AQUA metrics: Solvable answers and conditioned pairs."""

    kept: tuple[ItemOutcome, ...]
    own_solvable: dict[str | int, bool]
    condition: dict[str | int, bool]
    conditioned: dict[str, ConditionedItems]
    n_excluded: int
    n_unconditioned: int


def clip_outcomes(
    values: Iterable[Mapping | Sequence | int],
    condition: Mapping[str | int, bool] | None = None,
) -> ClipOutcomes:
    """Pair every kept unanswerable item with its clip's Solvable answer, per type.

    `condition` maps clips to the correctness of *another* run's Solvable answer (e.g. CA of
    a chain-of-thought run conditioned on the plain run, the paper's Table 1 layout); by
    default a run conditions on its own Solvable answers (`own_solvable`, one per clip).
    """
    outcomes = [as_outcome(v) for v in values]
    kept = tuple(o for o in outcomes if not o.excluded)
    own = {o.clip: o.correct for o in kept if o.type == "Solvable"}
    solvable = own if condition is None else {c: bool(ok) for c, ok in condition.items()}
    conditioned = {}
    for item_type in UNANSWERABLE_TYPES:
        paired = [o for o in kept if o.type == item_type and o.clip in solvable]
        conditioned[item_type] = ConditionedItems(
            clips=tuple(o.clip for o in paired),
            solvable_right=np.array([solvable[o.clip] for o in paired], dtype=bool),
            variant_right=np.array([o.correct for o in paired], dtype=bool),
        )
    return ClipOutcomes(
        kept=kept,
        own_solvable=own,
        condition=solvable,
        conditioned=conditioned,
        n_excluded=len(outcomes) - len(kept),
        n_unconditioned=sum(1 for o in kept if o.type != "Solvable" and o.clip not in solvable),
    )


def _mean(values: Sequence[bool]) -> float:
    return sum(values) / len(values) if len(values) else math.nan


def summarize(
    values: Iterable[Mapping | Sequence | int],
    condition: Mapping[str | int, bool] | None = None,
) -> dict[str, float]:
    """All AQUA metrics from per-item values (see `as_outcome`); NaN where a rate is undefined.

    `condition` is as for `clip_outcomes`: another run's Solvable answers per clip.
    """
    outcomes = clip_outcomes(values, condition)
    kept = outcomes.kept
    summary: dict[str, float] = {
        "acc": _mean(list(outcomes.own_solvable.values())),
        "unparsed_rate": _mean([not o.parsed for o in kept]),
        "n_items": float(len(kept)),
        "n_solvable": float(len(outcomes.own_solvable)),
        "n_excluded": float(outcomes.n_excluded),
        "n_unconditioned": float(outcomes.n_unconditioned),
    }
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        pairs = outcomes.conditioned[item_type]
        conditioned = pairs.variant_right[pairs.solvable_right].tolist()
        summary[f"acc_{key}"] = _mean([o.correct for o in kept if o.type == item_type])
        summary[f"ca_{key}"] = _mean(conditioned)
        summary[f"n_ca_{key}"] = float(len(conditioned))
        summary[f"joint_{key}"] = _mean((pairs.solvable_right & pairs.variant_right).tolist())
    return summary
