"""Open-ended AQUA (`aqua-open_<track>`): the questions without options, and how replies count.

Each clip keeps two of its four released questions. Its Solvable question is asked as written
without the options; its reference is the clip's true class. Its IAQD question (one the
clip's sound cannot answer, e.g. where the heard animal is) is asked the same way; its
reference is an abstention. AAD and IASD have no open form: their defect lives in the options
(the right class is left out, or every option is from the wrong category), so without options
they are the Solvable question again.

A judge (`metric: orca`) rates each reply against its reference; an item counts as correct
when the judge's expected rating reaches the run's threshold (`JudgeRule`). Beside the judge
stands a rule-based reading of every reply (`reply_stance`): does it abstain, refuse (say the
model could not perceive the audio, which is no judgement of the question), or answer?
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from aqua_tasks.core.data import INLINE_LABEL, AquaItem
from aqua_tasks.core.extract.languages import gloss
from aqua_tasks.core.extract.reasoning import split_reply
from aqua_tasks.core.extract.rules_non_answers import hedge_phrase, refusal_phrase
from aqua_tasks.core.intervals import metric_stderrs
from aqua_tasks.core.scoring import ItemOutcome, summarize
from aqua_tasks.core.stats import binomial_stderr
from aqua_tasks.errors import AquaDataError

# Bumped whenever the wording below changes: runs record it, and the gate refuses to compare
# runs asked with different prompts.
OPEN_PROMPT_VERSION = "open-v1"
OPEN_GUIDANCE = "Answer in a few words. If the question cannot be answered from the audio, say so."
OPEN_TYPES: tuple[str, ...] = ("Solvable", "IAQD")
NO_OPEN_FORM: tuple[str, ...] = ("AAD", "IASD")
NO_OPEN_FORM_REASON = (
    "AAD and IASD have no open-ended form: their defect lives in the options, and without "
    "options they are the Solvable question again"
)
ABSTENTION_REFERENCE = "It cannot be determined from the audio."
REFERENCE_KINDS: tuple[str, ...] = ("class", "abstention")

# The three ways a reply can stand towards its question, read by rule.
ABSTAINS = "abstains"
REFUSES = "refuses"
ANSWERS = "answers"
STANCES: tuple[str, ...] = (ABSTAINS, REFUSES, ANSWERS)


def open_question(item: AquaItem) -> str:
    """The released question's stem, without its inline options and option guidance."""
    first_line = item.question.split("\n", 1)[0]
    found = INLINE_LABEL.search(first_line)
    stem = (first_line[: found.start()] if found else first_line).strip()
    if not stem:
        raise AquaDataError(
            f"{item.track} item {item.id}: the question has no text before its options"
        )
    return stem


def open_prompt(question: str) -> str:
    """The prompt of an open-ended item (version `OPEN_PROMPT_VERSION`)."""
    return f"{question}\n{OPEN_GUIDANCE}"


def reference_of(item: AquaItem) -> tuple[str, str]:
    """An open item's reference answer and its kind ('class' or 'abstention')."""
    if item.type == "Solvable":
        return item.answer, "class"
    if item.type == "IAQD":
        return ABSTENTION_REFERENCE, "abstention"
    raise AquaDataError(f"{item.track} item {item.id}: {item.type} has no open form")


def rationale_of(item: AquaItem) -> str:
    """Why the reference is right, for a judge that reads rationales."""
    heard = item.true_class or (item.answer if item.type == "Solvable" else "")
    if item.type == "Solvable":
        return f"The sound in the recording is {heard}."
    about = f" ({item.subtype})" if item.subtype else ""
    sound = f"The recording is of {heard}, but the" if heard else "The"
    return (
        f"{sound} question asks for something{about} the sound alone does not reveal, so the "
        "right answer says that it cannot be determined from the audio."
    )


# An abstention says the question cannot be answered, in any of these frames (after the
# lexicon languages are glossed into English, as the multiple-choice rules read them).
_MODAL = (
    r"(?:can't|cannot|can\s+not|could\s+not|couldn't|unable\s+to|not\s+able\s+to"
    r"|impossible\s+to|no\s+way\s+to|not\s+possible\s+to|hard\s+to|difficult\s+to)"
)
_KNOW = r"(?:tell|determine|know|say|infer|deduce|judge|identify|answer|be\s+sure|be\s+certain)"
_ABSTENTION = re.compile(
    rf"\b{_MODAL}\s+(?:\w+\s+){{0,2}}?{_KNOW}\b"
    r"|\bcan(?:not|'t|\s+not)\s+be\s+(?:determined|known|told|inferred|answered|deduced|identified|said)\b"
    r"|\b(?:is|are)\s+(?:not\s+(?:determinable|knowable|answerable|clear|evident|possible\s+to\s+\w+))\b"
    r"|\bunanswerable\b|\bundeterminable\b|\bnot\s+answerable\b|\bnone\s+of\s+the\s+above\b"
    r"|\b(?:not\s+enough|no|insufficient|not\s+sufficient|lacks?|lack\s+of)\s+(?:\w+\s+)?"
    r"(?:information|evidence|context|clues?|indication)\b"
    r"|\b(?:audio|recording|sound|clip)\s+(?:alone\s+)?(?:does\s+not|doesn't|do\s+not|don't|cannot|can't)\s+"
    r"(?:reveal|indicate|show|tell|say|contain|provide|give|convey|specify|allow)\b"
    r"|\bthere\s+is\s+no\s+(?:way|information|indication|clue|evidence)\b"
    r"|\bno\s+(?:way|means)\s+(?:of|to)\s+(?:know|tell|determin)\w*"
    r"|^\W*(?:unknown|unclear|uncertain|n/?a)\W*$"
)


def abstention_phrase(reply: str) -> str | None:
    """The phrase by which a reply says its question cannot be answered, if any."""
    low = gloss(reply)[0].casefold()
    found = _ABSTENTION.search(low)
    if found is not None:
        return " ".join(found.group().split())
    return hedge_phrase(low)


def reply_stance(reply: str | None) -> str:
    """Whether a reply abstains, refuses (could not perceive the audio) or answers, by rule.

    The final part of a reply decides (after a reasoning block, as for multiple choice); a
    capability refusal wins over abstention: "I cannot hear audio, so I cannot tell" says
    nothing of the question.
    """
    final = split_reply(reply or "").final
    low = gloss(final)[0].casefold()
    if not low.strip():
        return REFUSES
    if refusal_phrase(low) is not None:
        return REFUSES
    if abstention_phrase(final) is not None:
        return ABSTAINS
    return ANSWERS


@dataclass(frozen=True)
class JudgeRule:
    """When a judged reply counts as correct: its expected rating (1-5) reaches `threshold`.

    A Bernoulli judge's expected rating is 1 + 4·P(correct), so P(correct) ≥ .5 is 3.0.
    """

    threshold: float = 4.0

    def __post_init__(self) -> None:
        if isinstance(self.threshold, bool) or not 1.0 <= float(self.threshold) <= 5.0:
            raise AquaDataError(
                f"judge_threshold must be a rating between 1 and 5, got {self.threshold!r}"
            )

    @classmethod
    def from_setting(cls, value: object) -> JudgeRule:
        """The rule a `judge_threshold` setting names (None: the default, 4.0)."""
        if value is None or value == "":
            return cls()
        if isinstance(value, bool):
            raise AquaDataError(f"judge_threshold must be a rating between 1 and 5, got {value!r}")
        try:
            return cls(float(value))  # type: ignore[arg-type]
        except (TypeError, ValueError):
            raise AquaDataError(
                f"judge_threshold must be a rating between 1 and 5, got {value!r}"
            ) from None

    def correct(self, expected_unit: float) -> bool:
        """Whether a reply with this expected correctness on the unit scale counts as right."""
        return 1.0 + 4.0 * float(expected_unit) >= self.threshold - 1e-9

    def describe(self) -> str:
        """The rule as recorded with the figures."""
        return f"expected judge rating >= {self.threshold:g}"


def _mentions(low: str, name: str) -> bool:
    words = r"\s+".join(map(re.escape, name.casefold().split()))
    return bool(words) and re.search(rf"(?<!\w){words}(?:e?s)?(?!\w)", low) is not None


def names_reference(reply: str | None, reference: str, classes: Sequence[str]) -> bool:
    """Whether a reply names its reference class and no other of the clip's class names.

    The rule-based reading of a Solvable answer: a reply that names the heard class ("a
    dog barking") is right, one that names two classes ("a dog or a pig") or abstains is not.
    """
    final = split_reply(reply or "").final
    low = gloss(final)[0].casefold()
    if not _mentions(low, reference) or abstention_phrase(final) is not None:
        return False
    others = [c for c in classes if c.casefold() != reference.casefold()]
    # A class name inside the reference's ("Lion" in "Sea lion") is not another class named.
    return not any(_mentions(low, c) and not _mentions(reference.casefold(), c) for c in others)


def open_value(doc: Mapping, reply: str | None) -> dict:
    """The per-item value an open-ended task logs: item, clip, type, and the rules' reading."""
    stance = reply_stance(reply)
    if doc["type"] == "Solvable":
        by_rule = stance == ANSWERS and names_reference(
            reply, str(doc["reference"]), list(doc["classes"])
        )
    else:
        by_rule = stance == ABSTAINS
    return {
        "id": int(doc["id"]),
        "clip": int(doc["clip_index"]),
        "type": str(doc["type"]),
        "stance": stance,
        "rule_correct": by_rule,
        "threshold": float(doc["judge_threshold"]),
    }


def judged_outcomes(
    values: Sequence[Mapping], expected_units: Sequence[float | None], rule: JudgeRule
) -> tuple[ItemOutcome, ...]:
    """Each item's outcome as the judge decides it (`parsed`: the judge rated it)."""
    if len(values) != len(expected_units):
        raise AquaDataError(
            f"open-ended scoring got {len(values)} items but {len(expected_units)} judgements"
        )
    return tuple(
        ItemOutcome(
            int(v["clip"]),
            str(v["type"]),
            unit is not None and rule.correct(unit),
            unit is not None,
            False,
        )
        for v, unit in zip(values, expected_units, strict=True)
    )


def rule_outcomes(values: Sequence[Mapping]) -> tuple[ItemOutcome, ...]:
    """Each item's outcome as the rules decide it, with no judge.

    A Solvable answer is right when it names the clip's class and no other class name; an
    IAQD answer when it abstains (a refusal is not an abstention).
    """
    return tuple(
        ItemOutcome(v["clip"], str(v["type"]), bool(v["rule_correct"]), True, False) for v in values
    )


def stance_shares(values: Iterable[Mapping]) -> dict[str, float]:
    """Per type, the share of replies the rules read as abstaining or refusing."""
    values = list(values)
    shares: dict[str, float] = {}
    for item_type in OPEN_TYPES:
        of_type = [v for v in values if v["type"] == item_type]
        for stance in (ABSTAINS, REFUSES):
            hits = sum(1 for v in of_type if v["stance"] == stance)
            shares[f"{stance}_{item_type.lower()}"] = (
                hits / len(of_type) if of_type else float("nan")
            )
    return shares


# The figures an open task reports beside orca's own: the judge's AQUA figures, the same with
# IAQD decided by the rule-based abstention reading, the rules' stance shares, and counts.
JUDGED_METRICS: tuple[str, ...] = ("acc", "acc_iaqd", "ca_iaqd", "joint_iaqd")
RULE_METRICS: tuple[str, ...] = tuple(f"{m}_rule" for m in JUDGED_METRICS)
STANCE_METRICS: tuple[str, ...] = (
    "abstains_solvable",
    "refuses_solvable",
    "abstains_iaqd",
    "refuses_iaqd",
)
OPEN_COUNTS: tuple[str, ...] = (
    "n_items",
    "n_solvable",
    "n_ca_iaqd",
    "n_ca_iaqd_rule",
    "n_unjudged",
)
OPEN_RATES: tuple[str, ...] = (*JUDGED_METRICS, *RULE_METRICS, *STANCE_METRICS, "judge_rule_agree")
OPEN_METRICS: tuple[str, ...] = (*OPEN_RATES, *OPEN_COUNTS)
OPEN_LOWER_IS_BETTER = frozenset({"abstains_solvable", "refuses_solvable", "refuses_iaqd"})


def open_figures(values: Sequence[Mapping], judged: Sequence[ItemOutcome]) -> dict[str, float]:
    """Every open figure of a task's per-item values and the outcomes the judge decided."""
    by_judge = summarize(judged)
    by_rule = summarize(rule_outcomes(values))
    figures = {m: by_judge[m] for m in JUDGED_METRICS}
    for metric in RULE_METRICS:
        figures[metric] = by_rule[metric.removesuffix("_rule")]
    figures |= stance_shares(values)
    judged_items = [(v, o) for v, o in zip(values, judged, strict=True) if o.parsed]
    agree = [bool(v["rule_correct"]) == o.correct for v, o in judged_items]
    figures["judge_rule_agree"] = sum(agree) / len(agree) if agree else float("nan")
    figures["n_items"] = float(len(values))
    figures["n_solvable"] = by_judge["n_solvable"]
    figures["n_ca_iaqd"] = by_judge["n_ca_iaqd"]
    figures["n_ca_iaqd_rule"] = by_rule["n_ca_iaqd"]
    figures["n_unjudged"] = float(len(values) - len(judged_items))
    return figures


def open_stderrs(
    values: Sequence[Mapping], judged: Sequence[ItemOutcome], *, n_boot: int = 1000, seed: int = 0
) -> dict[str, float]:
    """Standard errors of the open rates: binomial for shares, clip bootstrap for CA."""
    by_judge = metric_stderrs(judged, n_boot=n_boot, seed=seed)
    by_rule = metric_stderrs(rule_outcomes(values), n_boot=n_boot, seed=seed)
    out = {m: by_judge[m] for m in JUDGED_METRICS}
    for metric in RULE_METRICS:
        out[metric] = by_rule[metric.removesuffix("_rule")]
    for item_type in OPEN_TYPES:
        of_type = [v for v in values if v["type"] == item_type]
        for stance in (ABSTAINS, REFUSES):
            hits = sum(1 for v in of_type if v["stance"] == stance)
            out[f"{stance}_{item_type.lower()}"] = binomial_stderr(hits, len(of_type))
    judged_items = [(v, o) for v, o in zip(values, judged, strict=True) if o.parsed]
    agree = sum(1 for v, o in judged_items if bool(v["rule_correct"]) == o.correct)
    out["judge_rule_agree"] = binomial_stderr(agree, len(judged_items))
    return out


def pool_open(
    per_task: Mapping[str, tuple[Sequence[Mapping], Sequence[ItemOutcome]]],
) -> tuple[list[dict], list[ItemOutcome]]:
    """Several tasks' values and outcomes as one row's, each clip keyed by (task, clip)."""
    values: list[dict] = []
    judged: list[ItemOutcome] = []
    for task, (task_values, task_judged) in per_task.items():
        values += [{**v, "clip": (task, v["clip"])} for v in task_values]
        judged += [o._replace(clip=(task, o.clip)) for o in task_judged]
    return values, judged
