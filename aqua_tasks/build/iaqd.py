"""IAQD questions behind one interface: the offline template generator and the draft rules.

A generator turns an item into a draft (a question about something the audio cannot tell and
four options); every draft, a template's or a language model's, passes `validate_draft`.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

from aqua_tasks.build.categories import Bank, pool
from aqua_tasks.build.text import is_rejection_like, option_key, terms, text_terms

IAQD_OPTIONS = 4
INLINE_OPTION = re.compile(r"\(\s*[a-e]\s*\)\s*\S", re.IGNORECASE)
NOUNS = {"sound": "sound", "music": "music", "speech": "speech"}


class InvalidDraft(ValueError):
    """A draft breaks a rule; `reason` is a short label counted in the manifest."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason


@dataclass(frozen=True)
class IaqdRequest:
    """What a generator sees of an item (after the builder's repairs)."""

    id: str
    question: str
    choices: tuple[str, ...]
    answer: str
    noun: str = "audio"  # what the clip is: sound, music, speech or audio


@dataclass(frozen=True)
class IaqdDraft:
    """A new question stem, its four options (no rejection option yet) and what it asks."""

    question: str
    options: tuple[str, ...]
    attribute: str


@dataclass
class IaqdOutcome:
    """A generator's result for one item: the draft (None: fall back) and what it took."""

    draft: IaqdDraft | None
    attempts: int = 1
    failures: list[str] = field(default_factory=list)  # one reason per rejected reply
    cached: int = 0  # replies read from the cache


class IaqdGenerator(Protocol):
    """Something that writes IAQD drafts."""

    name: str
    # Items it may be asked about at once (threads; each clip has its own seeded RNG, so the
    # output does not depend on it).
    concurrency: int

    def settings(self) -> dict[str, Any]:
        """What decides its drafts (recorded in the build manifest)."""
        ...

    def generate(self, request: IaqdRequest, rng: random.Random) -> IaqdOutcome:
        """A draft for one item, or an outcome without one."""
        ...


def noun_of(metadata: Mapping[str, Any]) -> str:
    """What a clip is, from MMAU's `task` field: sound, music, speech (else 'audio')."""
    return NOUNS.get(str(metadata.get("task", "")).strip().lower(), "audio")


def validate_draft(raw: object, request: IaqdRequest) -> IaqdDraft:
    """A draft from a parsed reply, or InvalidDraft naming the broken rule."""
    if not isinstance(raw, Mapping):
        raise InvalidDraft("not_an_object")
    question, options = raw.get("question"), raw.get("options")
    if not isinstance(question, str) or not question.strip():
        raise InvalidDraft("missing_question")
    if not isinstance(options, list) or not all(isinstance(o, str) and o.strip() for o in options):
        raise InvalidDraft("missing_options")
    options = [" ".join(o.split()) for o in options]
    if len(options) != IAQD_OPTIONS:
        raise InvalidDraft("wrong_option_count", f"{len(options)} options, expected 4")
    keys = [option_key(o) for o in options]
    if len(set(keys)) != IAQD_OPTIONS:
        raise InvalidDraft("repeated_option")
    if any(is_rejection_like(o) or option_key(o) == "unanswerable" for o in options):
        raise InvalidDraft("rejection_option")
    if set(keys) & {option_key(c) for c in request.choices}:
        raise InvalidDraft("original_choice")
    question = " ".join(question.split())
    if option_key(question) == option_key(request.question):
        raise InvalidDraft("question_unchanged")
    if INLINE_OPTION.search(question):
        raise InvalidDraft("options_inline")
    attribute = raw.get("attribute")
    attribute = attribute.strip().lower() if isinstance(attribute, str) else ""
    return IaqdDraft(question, tuple(options), re.sub(r"\W+", "_", attribute).strip("_") or "llm")


def parse_reply(text: str) -> object:
    """The JSON object in a model reply (bare, or in a ```json fence); InvalidDraft if none."""
    body = text.strip()
    fenced = re.search(r"```(?:json)?\s*(.*?)```", body, re.DOTALL)
    if fenced:
        body = fenced.group(1).strip()
    start, end = body.find("{"), body.rfind("}")
    if start < 0 or end < start:
        raise InvalidDraft("not_json")
    try:
        return json.loads(body[start : end + 1])
    except json.JSONDecodeError:
        raise InvalidDraft("not_json") from None


class TemplateGenerator:
    """Offline IAQD: a seeded template question (brand, colour, price, name, city, date…)."""

    name = "template"
    concurrency = 1  # pure computation: threads would only contend for the interpreter

    def __init__(self, bank: Bank) -> None:
        self.bank = bank

    def settings(self) -> dict[str, Any]:
        """The templates and pools in use."""
        return {
            "templates": [
                {"attribute": t.attribute, "question": t.question, "pool": t.pool}
                for t in self.bank.templates
            ]
        }

    def generate(self, request: IaqdRequest, rng: random.Random) -> IaqdOutcome:
        """A template draft whose options share no term with the item's choices."""
        item_terms = terms((*request.choices, request.answer))
        candidates = []
        for template in self.bank.templates:
            usable = [o for o in pool(self.bank, template.pool) if not text_terms(o) & item_terms]
            question = template.question.format(noun=request.noun)
            if len(usable) >= IAQD_OPTIONS and option_key(question) != option_key(request.question):
                candidates.append((template, question, usable))
        if not candidates:
            return IaqdOutcome(None, failures=["no_template_fits"])
        template, question, usable = rng.choice(candidates)
        options = rng.sample(usable, IAQD_OPTIONS)
        raw = {"question": question, "options": options, "attribute": template.attribute}
        return IaqdOutcome(validate_draft(raw, request))


def draft_for(
    generator: IaqdGenerator,
    fallback: TemplateGenerator,
    request: IaqdRequest,
    rng: random.Random,
) -> tuple[IaqdDraft | None, IaqdOutcome, bool]:
    """(draft, the generator's outcome, whether the template stood in for it)."""
    outcome = generator.generate(request, rng)
    if outcome.draft is not None or generator is fallback:
        return outcome.draft, outcome, False
    return fallback.generate(request, rng).draft, outcome, True


def choices_text(choices: Sequence[str]) -> str:
    """The original choices as a prompt lists them."""
    return "; ".join(choices)
