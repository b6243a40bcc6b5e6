"""Per-item verdicts and the AQUA protocol metrics (accuracy and conditional accuracy)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass

from aqua_tasks.data import UNANSWERABLE_TYPES, AquaItem
from aqua_tasks.extract import extract

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

    def to_record(self) -> dict:
        """JSON-ready row for per-item output."""
        row = asdict(self)
        row["flags"] = list(self.flags)
        return row


def score_reply(
    item: AquaItem, reply: str | None, *, extractor: str = "mmau", exclude_defective: bool = False
) -> Verdict:
    """Extract the chosen option from a reply and judge it against the released gold."""
    result = extract(
        reply or "", item.options, extractor=extractor, rejection_strings=item.rejection_strings
    )
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
        extractor=extractor,
        choice=result.letter,
        chosen_option=chosen,
        gold=f"({chr(ord('A') + item.answer_index)}) {item.answer}",
        correct=correct,
        parsed=result.parsed,
        reason=result.reason,
        flags=item.flags,
        excluded=exclude_defective and bool(item.flags),
    )


def metric_value(verdict: Verdict) -> dict:
    """The compact per-item value every AQUA metric aggregates over."""
    return {
        "id": verdict.id,
        "clip": verdict.clip,
        "type": verdict.type,
        "correct": verdict.correct,
        "parsed": verdict.parsed,
        "excluded": verdict.excluded,
    }


def _mean(values: list[bool]) -> float:
    return sum(values) / len(values) if values else math.nan


def summarize(
    values: Iterable[Mapping], condition: Mapping[str, bool] | None = None
) -> dict[str, float]:
    """All AQUA metrics from per-item values (see `metric_value`); NaN where a rate is undefined.

    `condition` maps clips to the correctness of *another* run's Solvable answer (e.g. CA of
    a chain-of-thought run conditioned on the plain run, the paper's Table 1 layout); by
    default a run conditions on its own Solvable answers.
    """
    rows = list(values)
    kept = [r for r in rows if not r["excluded"]]
    own = {r["clip"]: bool(r["correct"]) for r in kept if r["type"] == "Solvable"}
    solvable = own if condition is None else dict(condition)
    summary: dict[str, float] = {
        "acc": _mean(list(own.values())),
        "unparsed_rate": _mean([not r["parsed"] for r in kept]),
        "n_items": float(len(kept)),
        "n_solvable": float(len(own)),
        "n_excluded": float(len(rows) - len(kept)),
        "n_unconditioned": float(
            sum(1 for r in kept if r["type"] != "Solvable" and r["clip"] not in solvable)
        ),
    }
    for item_type in UNANSWERABLE_TYPES:
        key = item_type.lower()
        of_type = [r for r in kept if r["type"] == item_type]
        paired = [r for r in of_type if r["clip"] in solvable]
        conditioned = [bool(r["correct"]) for r in paired if solvable[r["clip"]]]
        summary[f"acc_{key}"] = _mean([bool(r["correct"]) for r in of_type])
        summary[f"ca_{key}"] = _mean(conditioned)
        summary[f"n_ca_{key}"] = float(len(conditioned))
        summary[f"joint_{key}"] = _mean(
            [solvable[r["clip"]] and bool(r["correct"]) for r in paired]
        )
    return summary


def format_table(
    rows: Mapping[str, Mapping[str, float]],
    *,
    intervals: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
    percent: bool = True,
) -> str:
    """Markdown table in the paper's layout: per track Ori (acc) and the three CAs, with n.

    With `intervals` (per row, per metric) each rate shows its 95 % interval in brackets.
    """
    header = (
        "| track | Ori | AAD | IASD | IAQD | n Ori | n AAD | n IASD | n IAQD | unparsed |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [header]
    scale = 100.0 if percent else 1.0

    def number(value: float | None) -> str:
        return "—" if value is None or math.isnan(value) else f"{value * scale:.1f}"

    def cell(name: str, metric: str) -> str:
        text = number(rows[name].get(metric, math.nan))
        low, high = (intervals or {}).get(name, {}).get(metric, (math.nan, math.nan))
        if text == "—" or math.isnan(low):
            return text
        return f"{text} [{number(low)}, {number(high)}]"

    for name, m in rows.items():
        rates = [cell(name, k) for k in ("acc", "ca_aad", "ca_iasd", "ca_iaqd")]
        counts = [
            _count(m.get(k, math.nan)) for k in ("n_solvable", "n_ca_aad", "n_ca_iasd", "n_ca_iaqd")
        ]
        cells = [name, *rates, *counts, number(m.get("unparsed_rate", math.nan))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _count(value: float) -> str:
    return "—" if value is None or math.isnan(value) else str(int(value))
