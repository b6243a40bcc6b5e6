"""Rule-rated candidates built offline from rated data, for an earlier curriculum stage.

The paper's first stage trains on LLM-generated candidates at controlled quality. Without an
LLM, some answers have a quality that follows from the item itself:

- `reference`: the reference answer as the candidate, bare or in a sentence → rated 5;
- `other-reference`: another question's reference (one that neither contains nor is
  contained in this reference), bare or in a sentence → rated 1;
- `non-answer`: a refusal or an answer that says nothing → rated 1;
- `partial`: the first half of a reference of four or more words → rated 2, 3, 3, 4 (such an
  answer may be enough or may miss the point; the spread says the rule is uncertain);
- `abstention` (opt-in): the question as one the audio cannot answer — an abstention as the
  reference, another abstention in other words as the candidate (the abstaining non-answers
  among them) → rated 5;
- `answer-to-abstention` (opt-in): the same abstention reference, the source's own answer as
  the candidate → rated 1.

The two abstention kinds teach a judge that "it cannot be told from the audio" can itself be
the right answer (AQUA's open IAQD items have such references); together with `non-answer`
(an abstention against a real reference → 1) they cover all four pairings of answers and
abstentions; a non-answer that abstains is rated 1 against a real reference and 5 against an
abstention, so only the reference tells them apart. Their wordings are this module's own,
never an evaluation item's.

One source item per question (normalised as in the held-out split) provides question,
reference, rationale and transcript, so a stage built from the training file never adds a
question the held-out part could contain.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from dataclasses import dataclass

from orca_judge.data import OrcaItem, normalize_question

# What `synthesize: true` and `orca synthesize` build unless kinds are named.
DEFAULT_KINDS = ("reference", "other-reference", "non-answer", "partial")
ABSTENTION_KINDS = ("abstention", "answer-to-abstention")
KINDS = DEFAULT_KINDS + ABSTENTION_KINDS
RATINGS: dict[str, tuple[int, ...]] = {
    "reference": (5, 5, 5),
    "other-reference": (1, 1, 1),
    "non-answer": (1, 1, 1),
    "partial": (2, 3, 3, 4),
    "abstention": (5, 5, 5),
    "answer-to-abstention": (1, 1, 1),
}
# Sentence frames an audio LM typically wraps a short answer in; `{}` is the answer.
FRAMES = (
    "{}",
    "The answer is {}.",
    "{}.",
    "Based on the audio, {}.",
    "It is {}.",
)
REFUSAL = "Sorry, I am not able to answer that."
NON_ANSWERS = (
    "I don't know.",
    "I cannot tell from the audio.",
    "The audio does not contain enough information to answer this question.",
    REFUSAL,
    "There is no way to know.",
)
PARTIAL_MIN_WORDS = 4
# References saying the question has no answer in the audio, and candidates saying the same in
# other words (an abstention kind pairs a reference with a candidate of another wording).
ABSTENTION_REFERENCES = (
    "The audio does not answer this question.",
    "This cannot be determined from the recording.",
    "Nothing in the audio tells us; the question cannot be answered.",
)
ABSTAINING_CANDIDATES = (
    "I can't tell from the audio.",
    "The recording doesn't say.",
    "There is no way to know that from this audio.",
    "It is not possible to determine this from what is heard.",
    "Unanswerable: the audio gives no clue about it.",
    # Terse ones: models often abstain in two words, and a judge that saw only sentences
    # rated a bare "Unknown." 1 against an abstention reference.
    "Not sure.",
    "Can't say.",
    "No idea.",
    # The non-answers that abstain, too: rated 1 against a real reference (`non-answer`) and 5
    # against an abstention reference, the same words teach the judge to read the reference.
    # With disjoint wordings it learned the wording instead and rated a terse "I don't know."
    # or "Unknown." 1 whatever the reference said (docs/open_ended.md).
    *(answer for answer in NON_ANSWERS if answer != REFUSAL),
)
ABSTENTION_RATIONALE = (
    "The question asks for something the audio does not contain, so the right answer says "
    "that it cannot be told from the audio; a specific answer is a guess."
)


@dataclass(frozen=True)
class SyntheticSummary:
    """How many candidates of each kind were built from how many questions."""

    questions: int
    per_kind: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.per_kind.values())


def _framed(answer: str, rng: random.Random) -> str:
    frame = rng.choice(FRAMES)
    text = answer.strip()
    if frame != "{}":
        text = text.rstrip(".")
        # Mid-sentence, "The answer is Boxing." reads wrong; acronyms (a second capital) stay.
        mid_sentence = not frame.startswith("{}")
        if mid_sentence and text[:1].isupper() and not text[1:2].isupper():
            text = text[:1].lower() + text[1:]
    return frame.format(text)


def _unrelated(a: str, b: str) -> bool:
    x, y = a.casefold().strip(), b.casefold().strip()
    return bool(x) and bool(y) and x not in y and y not in x


def build_synthetic_items(
    items: Sequence[OrcaItem], *, seed: int = 0, kinds: Sequence[str] = DEFAULT_KINDS
) -> tuple[list[OrcaItem], SyntheticSummary]:
    """Rule-rated candidates, one of each requested kind per question where the rule applies.

    Deterministic for a given (items, seed, kinds). Raises ValueError for an unknown kind or
    when the items hold fewer than two distinct references (no `other-reference` possible).
    """
    unknown = [k for k in kinds if k not in KINDS]
    if unknown:
        raise ValueError(f"unknown synthetic kind(s) {unknown}; choose from {list(KINDS)}")
    sources: dict[str, OrcaItem] = {}
    for it in items:
        sources.setdefault(normalize_question(it.question), it)
    questions = list(sources.values())
    references = sorted({it.reference.strip() for it in questions if it.reference.strip()})
    if "other-reference" in kinds and len(references) < 2:
        raise ValueError("other-reference candidates need at least two distinct references")
    rng = random.Random(seed)
    # Its own stream: asking for the abstention kinds leaves the other kinds' draws as they were.
    abstention_rng = random.Random(f"{seed}/abstention")
    built: list[OrcaItem] = []
    per_kind = dict.fromkeys(kinds, 0)

    def add(source: OrcaItem, kind: str, candidate: str, reference: str | None = None) -> None:
        built.append(
            OrcaItem(
                id=f"{source.id}#{kind}",
                question=source.question,
                reference=source.reference if reference is None else reference,
                rationale=source.rationale if reference is None else ABSTENTION_RATIONALE,
                transcript=source.transcript,
                candidate=candidate,
                ratings=RATINGS[kind],
            )
        )
        per_kind[kind] += 1

    for source in questions:
        reference = source.reference.strip()
        if not reference:
            continue
        if "reference" in kinds:
            add(source, "reference", _framed(reference, rng))
        if "other-reference" in kinds:
            # A few tries suffice: almost every pair of references is unrelated.
            for _ in range(20):
                other = rng.choice(references)
                if _unrelated(other, reference):
                    add(source, "other-reference", _framed(other, rng))
                    break
        if "non-answer" in kinds:
            add(source, "non-answer", rng.choice(NON_ANSWERS))
        words = reference.rstrip(".").split()
        if "partial" in kinds and len(words) >= PARTIAL_MIN_WORDS:
            add(source, "partial", " ".join(words[: math.ceil(len(words) / 2)]))
        if "abstention" in kinds:
            abstention = abstention_rng.choice(ABSTENTION_REFERENCES)
            candidate = abstention_rng.choice(ABSTAINING_CANDIDATES)
            add(source, "abstention", candidate, reference=abstention)
        if "answer-to-abstention" in kinds:
            abstention = abstention_rng.choice(ABSTENTION_REFERENCES)
            candidate = _framed(reference, abstention_rng)
            add(source, "answer-to-abstention", candidate, reference=abstention)
    rng.shuffle(built)
    return built, SyntheticSummary(questions=len(questions), per_kind=per_kind)
