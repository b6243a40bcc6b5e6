"""Input strings for the judge and token-limit truncation that always keeps the candidate answer."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

# Context fields in the order they are shortened when the token limit is exceeded.
_TRUNCATION_ORDER = ("transcript", "rationale", "question", "reference")


def _blocks_reference(
    item: Mapping[str, str], use_question: bool, use_rationale: bool, use_transcript: bool
) -> list[tuple[str, str]]:
    context = []
    if use_transcript and item["transcript"]:
        context.append("|transcription: " + item["transcript"])
    # The reference writes its context block whenever the rationale is used, empty or not
    # (" |context:  |question: …"); its published judges were trained on exactly that string.
    if use_rationale:
        context.append(item["rationale"])
    blocks = []
    if context:
        blocks.append((" |context: ", " ".join(context)))
    if use_question:
        blocks.append((" |question: ", item["question"]))
    blocks.append((" |correct answer: ", item["reference"]))
    blocks.append((" |candidate answer: ", item["candidate"]))
    return blocks


def _blocks_paper(
    item: Mapping[str, str], use_question: bool, use_rationale: bool, use_transcript: bool
) -> list[tuple[str, str]]:
    # x = [q; r; a; t; c]: question, reference, rationale, transcript, candidate.
    parts = [
        ("question", use_question),
        ("reference", True),
        ("rationale", use_rationale),
        ("transcript", use_transcript),
        ("candidate", True),
    ]
    blocks = []
    for name, wanted in parts:
        if wanted and (item[name] or name in ("candidate", "reference", "question")):
            sep = "" if not blocks else "\n"
            blocks.append((f"{sep}{name}: ", item[name]))
    return blocks


def format_text(
    item: Mapping[str, Any],
    template: str = "reference",
    *,
    use_question: bool = True,
    use_rationale: bool = True,
    use_transcript: bool = False,
) -> str:
    """The judge's input string for one item.

    An empty transcript is dropped; an empty rationale is dropped by the paper template and
    kept as an empty context block by the reference template, as the reference does.
    """
    fields = {
        k: str(item.get(k) or "")
        for k in ("question", "reference", "rationale", "transcript", "candidate")
    }
    builders = {"reference": _blocks_reference, "paper": _blocks_paper}
    if template not in builders:
        raise ValueError(f"unknown template {template!r}; expected one of {tuple(builders)}")
    return "".join(
        lab + text
        for lab, text in builders[template](fields, use_question, use_rationale, use_transcript)
    )


@dataclass(frozen=True)
class Encoded:
    """Token ids of one item and whether the context had to be shortened."""

    input_ids: list[int]
    truncated: bool


def encode(
    tokenizer: Any,
    item: Mapping[str, Any],
    *,
    template: str,
    max_tokens: int | None,
    add_special_tokens: bool,
    use_question: bool = True,
    use_rationale: bool = True,
    use_transcript: bool = False,
) -> Encoded:
    """Tokenise an item, shortening context fields (never the candidate) to fit max_tokens.

    max_tokens None keeps every token.
    """
    opts = {
        "use_question": use_question,
        "use_rationale": use_rationale,
        "use_transcript": use_transcript,
    }
    work = {
        k: str(item.get(k) or "")
        for k in ("question", "reference", "rationale", "transcript", "candidate")
    }

    def ids_of(fields: Mapping[str, str]) -> list[int]:
        text = format_text(fields, template, **opts)
        return tokenizer(text, add_special_tokens=add_special_tokens)["input_ids"]

    ids = ids_of(work)
    if max_tokens is None or len(ids) <= max_tokens:
        return Encoded(ids, False)
    for name in _TRUNCATION_ORDER:
        if not work[name]:
            continue
        ids = _shorten_field(work, name, ids_of, max_tokens)
        if len(ids) <= max_tokens:
            return Encoded(ids, True)
    # Only the candidate (and labels) are left and still too long: keep its end, which
    # is where last-token pooling reads.
    return Encoded(ids[-max_tokens:], True)


def _shorten_field(
    work: dict[str, str], name: str, ids_of: Callable[[Mapping[str, str]], list[int]], limit: int
) -> list[int]:
    """Cut work[name] to its longest character prefix that fits (or to nothing); new ids.

    Cuts are made on characters, not tokens: decoding a token prefix can split a multi-byte
    character into a replacement character that re-encodes longer, so token cuts need not
    converge. A binary search keeps the number of tokenisations logarithmic in the field.
    """
    text = work[name]
    work[name] = ""
    best = ids_of(work)
    if len(best) > limit:
        return best
    fits, too_long = 0, len(text)  # prefix lengths known to fit / known not to fit
    while too_long - fits > 1:
        middle = (fits + too_long) // 2
        work[name] = text[:middle]
        ids = ids_of(work)
        if len(ids) <= limit:
            fits, best = middle, ids
        else:
            too_long = middle
    work[name] = text[:fits]
    return best
