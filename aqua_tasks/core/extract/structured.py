"""Answers given in a structure under `aqua-rules`: `\\boxed{}`, JSON, a marked table row, ordinals.

A structured answer is explicit, so it decides before any cue or position rule: the boxed
content, the answer field of a JSON object (never the words of its explanation), or the one
table row marked as chosen. A verdict table (a yes/no or ✓/✗ column over the options, in any
lexicon language) that says "yes" to exactly one option chooses it; "no" to every option is a
rejection, and "yes" to more than one is ambiguous. Each piece is read with the plain rules,
so `\\boxed{c}`, `{"choice": "(c) Cow"}` and `| Cow | ✓ |` all mean the same. Ordinal words
("the second choice", "the final option") are option mentions like letters, so negation still
applies.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from dataclasses import replace

from aqua_tasks.core.extract.languages import verdict_words
from aqua_tasks.core.extract.rules_mentions import Mention, letter_mention
from aqua_tasks.core.extract.rules_words import Item
from aqua_tasks.core.extract.verdict import Extraction

Reader = Callable[[str], Extraction]  # the plain rules, applied to a piece of the reply

_BOXED = re.compile(r"\\boxed\s*\{([^{}]{1,120})\}")
_ANSWER_KEYS = ("answer", "final answer", "choice", "option", "selected option", "selection",
                "selected", "prediction", "label", "chosen option", "letter")  # fmt: skip
# Cells that mark a table row as the chosen one; crosses and "no" mark the others.
_MARK_VOCABULARY = "✓ ✔ ✅ ☑ ← <- <-- x yes selected chosen correct true"
_MARKS = frozenset(_MARK_VOCABULARY.split())
_TABLE_RULE = re.compile(r"\|?\s*:?-{2,}")
# Cells that say "no" to a row's option; with them the marks form a verdict column.
_NO_VOCABULARY = "✗ ✘ ❌ ✖ × no false incorrect wrong"
_NOES = frozenset(_NO_VOCABULARY.split())
# "No — it is bowed", "Yes (breathy)": the verdict word before a comment, not "no bowing".
_CELL_HEAD = re.compile(r"[\W_]*([^\W_]+|[✓✔✅☑✗✘❌✖×○〇])(?=\s*(?:$|[,.;:()\-–—]))")
# How a verdict table's "no to every option" is read: as the rules read a rejection.
_EVERY_OPTION_RULED_OUT = "none of the options"
_ORDINALS = {"first": 0, "1st": 0, "second": 1, "2nd": 1, "third": 2, "3rd": 2, "fourth": 3,
             "4th": 3, "fifth": 4, "5th": 4, "sixth": 5, "6th": 5}  # fmt: skip
_ORDINAL = re.compile(
    r"\b(?:the\s+)?(first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|sixth|6th|last|final)"
    r"\s+(?:option|choice|alternative)\b"
)


def ordinal_mentions(low: str, item: Item) -> list[Mention | None]:
    """Ordinal names of options ("the second choice", "the last option") as letter mentions."""
    found: list[Mention | None] = []
    for m in _ORDINAL.finditer(low):
        word = m.group(1)
        idx = len(item.options) - 1 if word in ("last", "final") else _ORDINALS[word]
        hit = letter_mention(m, chr(ord("a") + idx), item)
        if hit is not None:
            found.append(hit._replace(label=f"ordinal {m.group().strip()!r} = {hit.label}"))
    return found


def _json_answer(text: str) -> str | None:
    """The answer field of the (last) JSON object in the text, as a string, or None."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end <= start:
        return None
    try:
        data = json.loads(text[start : end + 1])
    except ValueError:
        return None
    while isinstance(data, dict):
        fields = {" ".join(str(k).replace("_", " ").split()).lower(): v for k, v in data.items()}
        value = next((fields[k] for k in _ANSWER_KEYS if k in fields), None)
        if isinstance(value, str | int) and not isinstance(value, bool):
            return str(value)
        data = value  # {"result": {"answer": "b"}} is not read; {"answer": {...}} is unwrapped
    return None


def _verdict(cell: str) -> bool | None:
    """True for a cell that says yes to its row ("Yes", "✓", "はい"), False for no, else None."""
    yes, no = verdict_words()
    folded = cell.strip(" *_`.!").lower()
    head = _CELL_HEAD.match(folded)
    for word in (folded, head.group(1) if head else None):
        if word in _MARKS or word in yes:
            return True
        if word in _NOES or word in no:
            return False
    return None


def _table_rows(text: str) -> list[tuple[str, bool | None]]:
    """Each Markdown table row (header and rule skipped): its other cells and its verdict."""
    lines = [line.strip() for line in text.splitlines() if line.strip().startswith("|")]
    rows = []
    for k, line in enumerate(lines):
        if _TABLE_RULE.match(line) or (k + 1 < len(lines) and _TABLE_RULE.match(lines[k + 1])):
            continue  # the rule line, and the header above it
        cells = [c.strip() for c in line.strip("|").split("|")]
        verdicts = [_verdict(c) for c in cells]
        said = {v for v in verdicts if v is not None}
        if len(said) == 1 and len(said) < len(cells):
            rest = " ".join(c for c, v in zip(cells, verdicts, strict=True) if v is None)
            rows.append((rest, said.pop()))
    return rows


def _table_answer(rows: list[tuple[str, bool | None]], read: Reader) -> Extraction | None:
    """The option a marked table row or a verdict column chooses, or None without either."""
    marked = [rest for rest, yes in rows if yes]
    noes = [rest for rest, yes in rows if yes is False]
    read_rows = [read(rest) for rest in marked]
    chosen = {r.choice for r in read_rows if r.parsed}
    if len(marked) > 1 and len(chosen) != 1:
        return Extraction(None, False, f"ambiguous: {len(marked)} table rows marked as chosen")
    if marked:
        return _piece(read_rows[0], "in the marked table row")
    if len(noes) < 2:
        return None
    rejection = read(_EVERY_OPTION_RULED_OUT)
    ruled_out = {r.choice for r in map(read, noes) if r.parsed}
    if rejection.choice is not None and rejection.choice in ruled_out:
        why = f"ambiguous: the verdict table says no to all {len(noes)} rows, the rejection too"
        return Extraction(None, False, why)
    return _piece(rejection, f"verdict table says no to all {len(noes)} rows")


def structured_answer(text: str, read: Reader) -> Extraction | None:
    """The answer a boxed, JSON or table-marked structure gives, or None if there is none."""
    boxed = list(_BOXED.finditer(text))
    if boxed:
        return _piece(read(boxed[-1].group(1)), "in \\boxed{}")
    field = _json_answer(text) if "{" in text else None
    if field is not None:
        return _piece(read(field), "in the JSON answer field")
    rows = _table_rows(text) if "|" in text else []
    return _table_answer(rows, read) if rows else None


def _piece(result: Extraction, where: str) -> Extraction:
    return replace(result, reason=f"{where}: {result.reason}")
