"""Several judges on one human-rated item file: agreement, speed, tokens and cost side by side.

Each judge gives every item a score on [0, 1] (ORCA: its clamped mean; a prompted judge:
(rating - 1) / 4, none for a failed judgement; a constant baseline: the same rating for all).
Agreement with the mean human rating — Spearman ρ, Kendall τ-b, MAE_μ — is computed by
`orca_judge.metrics.agreement` over the items the judge scored; failed judgements are counted
and left out. Prompted judges also report the tokens of the replies' `usage` and, with prices
(per million tokens), the cost per 1 000 items.
"""

from __future__ import annotations

import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any, Protocol

from eval_common.cli import number_problem
from orca_judge.data import OrcaItem
from orca_judge.errors import LlmJudgeError
from orca_judge.metrics import agreement
from orca_judge.prompted.judge import Judgement, PromptedJudge
from orca_judge.prompted.settings import build_settings


@dataclass
class JudgeRun:
    """What one judge gave: a [0, 1] score per item (None: no judgement) and what it cost."""

    scores: list[float | None]
    seconds: float
    prompt_tokens: int = 0
    completion_tokens: int = 0
    from_cache: int = 0


class ComparedJudge(Protocol):
    """A judge in the comparison: a name, a kind, and scores for items."""

    name: str
    kind: str
    prices: tuple[float, float] | None  # per million prompt / completion tokens

    def run(self, items: Sequence[OrcaItem]) -> JudgeRun:
        """Score every item."""
        ...


def human_unit(item: OrcaItem) -> float:
    """The item's mean human rating on [0, 1]."""
    assert item.ratings
    return (sum(item.ratings) / len(item.ratings) - 1) / 4


def judgement_report(judged: Sequence[Judgement], items: Sequence[OrcaItem]) -> dict[str, Any]:
    """Rated and failed counts, the mean normalised rating, and agreement where items are rated."""
    rated = [(j, i) for j, i in zip(judged, items, strict=True) if j.rating_unit is not None]
    units = [j.rating_unit for j, _ in rated]
    report: dict[str, Any] = {
        "rated": len(rated),
        "failed": len(judged) - len(rated),
        "mean_unit": sum(units) / len(units) if units else math.nan,
    }
    pairs = [(j.rating_unit, human_unit(i)) for j, i in rated if i.ratings]
    if pairs:
        report["agreement"] = agreement([p for p, _ in pairs], [h for _, h in pairs])
    return report


class OrcaCompared:
    """An ORCA checkpoint (its clamped mean)."""

    kind = "orca"
    prices = None

    def __init__(self, checkpoint: str, device: str | None = None) -> None:
        self.name = checkpoint
        self.checkpoint, self.device = checkpoint, device

    def run(self, items: Sequence[OrcaItem]) -> JudgeRun:
        from orca_judge.checkpoint.ensemble import load_judge

        judge = load_judge(self.checkpoint, device=self.device)
        started = time.perf_counter()
        predictions = judge.score(list(items))
        return JudgeRun([p.clamped_unit for p in predictions], time.perf_counter() - started)


class PromptedCompared:
    """A prompted LLM judge; `price_prompt` / `price_completion` (per million tokens) optional."""

    kind = "llm_judge"

    def __init__(self, spec: Mapping[str, str]) -> None:
        spec = dict(spec)
        prices = [spec.pop(k, None) for k in ("price_prompt", "price_completion")]
        self.name = spec.pop("name", None) or spec.get("model", "")
        self.settings = build_settings(spec, "--llm-judge")
        try:
            self.prices = (float(prices[0]), float(prices[1])) if any(prices) else None
        except (TypeError, ValueError):
            raise LlmJudgeError(
                f"--llm-judge {self.name}: price_prompt and price_completion are both needed, "
                "as numbers (per million tokens)"
            ) from None
        # A price of NaN printed "—" as if none were given; a negative one a negative cost.
        for key, price in zip(
            ("price_prompt", "price_completion"), self.prices or (), strict=False
        ):
            if problem := number_problem(key, price, minimum=0):
                raise LlmJudgeError(f"--llm-judge {self.name}: {problem}")

    def run(self, items: Sequence[OrcaItem]) -> JudgeRun:
        judge = PromptedJudge(self.settings)
        try:
            judged = judge.score([asdict(i) for i in items])
        finally:
            judge.close()
        s = judge.stats
        return JudgeRun(
            [j.rating_unit for j in judged],
            s.seconds,
            s.prompt_tokens,
            s.completion_tokens,
            s.from_cache,
        )


class ConstantCompared:
    """A baseline that gives every item the same 1-5 rating."""

    kind = "constant"
    prices = None

    def __init__(self, rating: float) -> None:
        if not 1 <= rating <= 5:
            raise LlmJudgeError(f"--constant {rating}: expected a rating from 1 to 5")
        self.name, self.rating = f"constant {rating:g}", rating

    def run(self, items: Sequence[OrcaItem]) -> JudgeRun:
        return JudgeRun([(self.rating - 1) / 4] * len(items), 0.0)


def compare_row(judge: ComparedJudge, items: Sequence[OrcaItem]) -> dict[str, Any]:
    """One judge's line of the comparison."""
    result = judge.run(items)
    pairs = [(s, human_unit(i)) for s, i in zip(result.scores, items, strict=True) if s is not None]
    figures = agreement([p for p, _ in pairs], [h for _, h in pairs])
    tokens = result.prompt_tokens + result.completion_tokens
    live = len(items) - result.from_cache
    per_1k = 1000 / len(items) if items else math.nan
    cost = None
    if judge.prices is not None:
        price_in, price_out = judge.prices
        spent = (result.prompt_tokens * price_in + result.completion_tokens * price_out) / 1e6
        cost = spent * per_1k
    return {
        "judge": judge.name,
        "kind": judge.kind,
        "n": figures["n"],
        "failed": len(items) - len(pairs),
        "rho": figures["rho"],
        "tau": figures["tau"],
        "mae_mu": figures["mae_mu"],
        "seconds": result.seconds,
        # Items asked live only: items from the cache took no judge time.
        "items_per_s": live / result.seconds if live > 0 and result.seconds > 0 else None,
        "tokens_per_1k": tokens * per_1k if judge.kind == "llm_judge" else None,
        "cost_per_1k": cost,
        "from_cache": result.from_cache,
    }


def compare(judges: Sequence[ComparedJudge], items: Sequence[OrcaItem]) -> list[dict[str, Any]]:
    """Every judge on the same human-rated items, in the order given."""
    unrated = [i.id for i in items if not i.ratings]
    if unrated:
        raise LlmJudgeError(
            f"{len(unrated)} item(s) have no human ratings (the first: {unrated[0]!r}): the "
            "comparison needs a `ratings` list on every item"
        )
    return [compare_row(judge, items) for judge in judges]
