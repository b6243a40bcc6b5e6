"""Can a judge checkpoint score open-ended AQUA? Its verdicts on abstentions, measured.

An open-ended IAQD item's right answer is an abstention ("It cannot be determined from the
audio"), its Solvable item's a class name. A judge fit for `aqua-open_*` rewards an
abstention against the abstention reference and a class name against its class, and rewards
neither against the other. `abstention_check` measures the four shares on the open tasks'
own items with hand-written abstentions, and, given human-rated items, how the judge rates
the candidates there that the rules read as abstaining, beside the humans' own ratings.
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aqua_tasks.core.open_ended import ABSTAINS, JudgeRule, reply_stance

# Written for this check, not taken from any model's replies: abstentions of the kinds models
# give, from terse to explanatory.
HAND_ABSTENTIONS: tuple[str, ...] = (
    "I can't tell from the audio.",
    "It is impossible to determine that from this recording.",
    "Unknown.",
    "The sound alone does not reveal that.",
    "There is not enough information in the clip to answer.",
    "I don't know.",
    "That cannot be determined.",
    "No way to know from what I hear.",
)
# (reference kind, candidate kind) → whether a fit judge calls such an answer right.
PAIRS: tuple[tuple[str, str, bool], ...] = (
    ("class", "the clip's class", True),
    ("class", "an abstention", False),
    ("abstention", "an abstention", True),
    ("abstention", "a class name", False),
)


@dataclass(frozen=True)
class PairShare:
    """How often the judge called one kind of candidate right against one kind of reference."""

    reference: str
    candidate: str
    fit_judge_says_right: bool
    n: int
    judged_right: float
    mean_rating: float


@dataclass(frozen=True)
class WordingShare:
    """How often the judge called one hand-written abstention right, per reference kind."""

    wording: str
    n_abstention: int  # against the abstention reference: a fit judge says right
    right_abstention: float
    n_class: int  # against a class reference: a fit judge says wrong
    right_class: float


@dataclass(frozen=True)
class HumanAbstentions:
    """Human-rated candidates the rules read as abstaining: the judge's view beside the humans'."""

    n: int
    human_right: float  # share whose mean human rating reaches the threshold
    judge_right: float  # share the judge calls right under the same threshold
    agreement: float  # share where both agree


@dataclass(frozen=True)
class AbstentionCheck:
    """The four pair shares, the human-rated abstentions, the rule, and a verdict line."""

    checkpoint: str
    rule: str
    pairs: tuple[PairShare, ...]
    human: HumanAbstentions | None
    # Per wording, because a judge can learn words instead of reading the reference: one that
    # rates "I don't know." 1 whatever the reference says fails on that wording alone.
    wordings: tuple[WordingShare, ...] = ()

    @property
    def worst_error(self) -> float:
        """The largest share of the judge's verdicts a fit judge would not give."""
        return max(
            (1 - p.judged_right) if p.fit_judge_says_right else p.judged_right for p in self.pairs
        )

    def verdict(self, tolerance: float = 0.1) -> str:
        """One line: whether the judge tells abstentions apart, by the worst pair."""
        worst = self.worst_error
        if worst <= tolerance:
            return (
                f"fit for open-ended AQUA: at most {worst:.0%} of its verdicts on abstentions "
                "and class names are wrong"
            )
        return (
            f"NOT fit for open-ended AQUA on its own: up to {worst:.0%} of its verdicts on "
            "abstentions and class names are wrong; read the rule-based figures (*_rule) "
            "beside its figures"
        )


def check_items(docs: Sequence[Mapping[str, Any]], seed: int = 0) -> list[dict[str, Any]]:
    """Judge inputs for the four pairs, one of each per open doc of its reference kind."""
    rng = random.Random(seed)
    items = []
    for doc in docs:
        base = {k: doc[k] for k in ("question", "reference", "rationale")} | {"transcript": ""}
        classes = [c for c in doc["classes"] if c != doc["reference"]] or ["a dog"]
        if doc["reference_kind"] == "class":
            candidates = [("the clip's class", doc["reference"])]
        else:
            candidates = [("a class name", rng.choice(doc["classes"] or classes))]
        candidates.append(("an abstention", rng.choice(HAND_ABSTENTIONS)))
        for kind, candidate in candidates:
            items.append(
                base
                | {
                    "id": f"{doc['track']}-{doc['id']}-{len(items)}",
                    "candidate": candidate,
                    "pair": (doc["reference_kind"], kind),
                }
            )
    return items


def pair_shares(
    items: Sequence[Mapping[str, Any]], units: Sequence[float], rule: JudgeRule
) -> tuple[PairShare, ...]:
    """The share of each pair's items the judge calls right (expected rating ≥ threshold)."""
    shares = []
    for reference, candidate, fit in PAIRS:
        got = [
            u
            for item, u in zip(items, units, strict=True)
            if item["pair"] == (reference, candidate)
        ]
        right = sum(rule.correct(u) for u in got)
        shares.append(
            PairShare(
                reference,
                candidate,
                fit,
                len(got),
                right / len(got) if got else float("nan"),
                sum(1 + 4 * u for u in got) / len(got) if got else float("nan"),
            )
        )
    return tuple(shares)


def wording_shares(
    items: Sequence[Mapping[str, Any]], units: Sequence[float], rule: JudgeRule
) -> tuple[WordingShare, ...]:
    """Each hand-written abstention's share judged right against either kind of reference."""
    verdicts: dict[tuple[str, str], list[bool]] = {}
    for item, unit in zip(items, units, strict=True):
        reference_kind, candidate_kind = item["pair"]
        if candidate_kind == "an abstention":
            verdicts.setdefault((item["candidate"], reference_kind), []).append(rule.correct(unit))

    def share(wording: str, reference_kind: str) -> tuple[int, float]:
        got = verdicts.get((wording, reference_kind), [])
        return len(got), (sum(got) / len(got) if got else float("nan"))

    return tuple(
        WordingShare(wording, *share(wording, "abstention"), *share(wording, "class"))
        for wording in HAND_ABSTENTIONS
        if (wording, "abstention") in verdicts or (wording, "class") in verdicts
    )


def abstaining_human_items(items: Sequence[Any]) -> list[Any]:
    """The human-rated items (`orca_judge.data.OrcaItem`) whose candidate abstains, by rule."""
    return [it for it in items if it.ratings and reply_stance(it.candidate) == ABSTAINS]


def human_abstentions(
    items: Sequence[Any], units: Sequence[float], rule: JudgeRule
) -> HumanAbstentions | None:
    """How the judge and the humans rate the abstaining human-rated candidates."""
    if not items:
        return None
    human = [rule.threshold <= sum(it.ratings) / len(it.ratings) for it in items]
    judge = [rule.correct(u) for u in units]
    agree = [h == j for h, j in zip(human, judge, strict=True)]
    n = len(items)
    return HumanAbstentions(n, sum(human) / n, sum(judge) / n, sum(agree) / n)


def check_markdown(check: AbstentionCheck) -> str:
    """The check as a Markdown table and its verdict."""
    lines = [
        f"Judge {check.checkpoint}; an answer is right when its {check.rule}.",
        "",
        "| reference | candidate | a fit judge says | n | judged right | mean rating |",
        "|---|---|---|---|---|---|",
    ]
    for p in check.pairs:
        fit = "right" if p.fit_judge_says_right else "wrong"
        lines.append(
            f"| {p.reference} | {p.candidate} | {fit} | {p.n} | {p.judged_right:.1%} "
            f"| {p.mean_rating:.2f} |"
        )
    if check.human is not None:
        h = check.human
        lines += [
            "",
            f"Human-rated candidates the rules read as abstaining: {h.n}; humans call "
            f"{h.human_right:.1%} of them right, the judge {h.judge_right:.1%} "
            f"(agreement {h.agreement:.1%}).",
        ]
    if check.wordings:
        lines += [
            "",
            "| abstention | judged right against an abstention (n) | against a class (n) |",
            "|---|---|---|",
        ]

        def cell(share: float, n: int) -> str:
            return f"{share:.1%} ({n})" if n else "—"

        lines += [
            f"| {w.wording} | {cell(w.right_abstention, w.n_abstention)} "
            f"| {cell(w.right_class, w.n_class)} |"
            for w in check.wordings
        ]
    lines += ["", check.verdict()]
    return "\n".join(lines)
