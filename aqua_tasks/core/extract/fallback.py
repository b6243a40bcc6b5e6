"""The pure half of the LLM fallback (`aqua-rules+llm`): its prompt, its reply, its reading.

The rules read a reply first; only a reply they leave unparsed, and that has text to read
(not a failed generation, not empty), is shown to a chat model with the item's lettered
options. The model answers with one JSON object, `{"answer": "<letter>"}` or `rejection`,
`refusal`, `none`. What the fallback read is logged per item as one small integer
(a code of this module), so a run is re-scored from its samples without asking the model again.
The network half (backends, cache, counts) is `aqua_tasks.task.fallback`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from aqua_tasks.core.extract.verdict import Extraction, fold
from aqua_tasks.core.generation_failure import failure_message
from aqua_tasks.core.generation_limit import split_token_limit
from eval_common.jsonio import json_object_in_reply

FALLBACK_EXTRACTOR = "aqua-rules+llm"
# Recorded with every run and part of every cache key: a changed wording needs a new version.
FALLBACK_PROMPT_VERSION = "aqua-fallback-v1"
# The settings a run's `--metadata '{"fallback": {...}}'` may hold (those of a prompted
# judge's client: `orca_judge.prompted.settings`); the API key itself is never a setting.
FALLBACK_SETTING_NAMES: tuple[str, ...] = (
    "model",
    "backend",
    "base_url",
    "api_key_env",
    "max_tokens",
    "timeout",
    "max_retries",
    "max_attempts",
    "concurrency",
    "cache",
    "cache_dir",
    "device",
)
FALLBACK_BACKENDS = ("openai", "hf")

SYSTEM_PROMPT = (
    "You read which option a reply to a multiple-choice question chose. You never answer the "
    "question yourself and never guess. You reply with JSON only."
)
INSTRUCTIONS = """Which option does the reply commit to as its final answer?
- the option's letter when the reply commits to exactly one option;
- "rejection" when the reply says that none of the options is right or that the question
  cannot be answered;
- "refusal" when the reply declines the task (for example it says it cannot hear audio);
- "none" when the reply commits to no answer (it hedges, is cut off, or says nothing).
Read the reply only: do not judge whether its answer is correct."""
REPLY_SCHEMA = '{"answer": "<letter> | rejection | refusal | none"}'
RETRY_PROMPT = "That reply is not usable ({reason}). Reply again with JSON only, exactly: "

# What the fallback read, as logged per item: 0 not asked, 1 failed (invalid replies after
# every re-ask, or the request failed), 2 none, 3 refusal, 4 rejection, 5 + i option i.
NOT_ASKED, FAILED, NONE, REFUSAL, REJECTION = range(5)
OPTION_CODES_START = 5
# The test question a run's reader answers before any generation (key, model, reply form).
PROBE_OPTIONS = ("a dog barking", "a cat meowing")
PROBE_REPLY = "Listening again, I am fairly sure it is (b), a cat meowing."
WORDS = {"none": NONE, "refusal": REFUSAL, "rejection": REJECTION}


@dataclass(frozen=True)
class FallbackAnswer:
    """A fallback reply read: the packed reading, or why the reply is not usable."""

    reading: int | None
    problem: str | None = None


def fallback_messages(options: Sequence[str], reply: str) -> list[dict[str, str]]:
    """The chat that asks the fallback model what a reply chose among the lettered options."""
    lettered = "\n".join(f"({chr(ord('a') + i)}) {o}" for i, o in enumerate(options))
    user = (
        f"{INSTRUCTIONS}\n\nOptions:\n{lettered}\n\nReply:\n<<<\n{reply}\n>>>\n\n"
        f"Reply with JSON only: {REPLY_SCHEMA}"
    )
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def re_ask(messages: list[dict[str, str]], reply: str, reason: str) -> list[dict[str, str]]:
    """The chat continued with the unusable reply and a request to answer again."""
    return [
        *messages,
        {"role": "assistant", "content": reply},
        {"role": "user", "content": RETRY_PROMPT.format(reason=reason) + REPLY_SCHEMA},
    ]


def read_fallback_reply(text: str, n_options: int) -> FallbackAnswer:
    """The reading of a reply like `{"answer": "c"}`, or the problem the re-ask quotes."""
    data = json_object_in_reply(text)
    if data is None:
        return FallbackAnswer(None, f"not a JSON object: {text.strip()[:80]!r}")
    answer = data.get("answer")
    if not isinstance(answer, str):
        return FallbackAnswer(None, "no string `answer` key")
    word = answer.strip().strip("()").strip().lower()
    if word in WORDS:
        return FallbackAnswer(WORDS[word])
    if len(word) == 1 and "a" <= word < chr(ord("a") + n_options):
        return FallbackAnswer(OPTION_CODES_START + ord(word) - ord("a"))
    last = chr(ord("a") + n_options - 1)
    return FallbackAnswer(
        None, f"`answer` is {answer!r}, expected a letter a-{last}, rejection, refusal or none"
    )


# How `aqua-rules` words a capability refusal (rules.py `_refused`, rules_non_answers.py).
REFUSAL_REASON = "refusal:"


def needs_fallback(reply: str, rules: Extraction) -> bool:
    """Whether the fallback is asked: the rules left the reply unparsed and it has words.

    A failed generation and a reply without a word character have nothing to read, so no
    model is asked to read them. A capability refusal is a reading of its own (the model did
    not listen): a fallback that read its "so none of these" as the rejection would let CA
    reward a model that never heard the clip.
    """
    if rules.parsed or failure_message(reply) is not None:
        return False
    if rules.reason.startswith(REFUSAL_REASON):
        return False
    return re.search(r"\w", split_token_limit(reply)[0]) is not None


def is_fallback_read(reading: int) -> bool:
    """Whether the fallback read an answer (an option or a rejection): counted `n_fallback`."""
    return reading >= REJECTION


def fallback_counts(readings: Sequence[int]) -> dict[str, int]:
    """`n_fallback` (read into an answer) and `n_fallback_failed` of logged readings."""
    values = [int(r) for r in readings]
    return {
        "n_fallback": sum(is_fallback_read(r) for r in values),
        "n_fallback_failed": sum(r == FAILED for r in values),
    }


def rejection_index(options: Sequence[str], rejection_strings: Sequence[str]) -> int | None:
    """The index of the item's rejection option (first match), None when it has none."""
    rejections = {fold(r) for r in rejection_strings}
    return next((i for i, o in enumerate(options) if fold(o) in rejections), None)


def apply_reading(
    rules: Extraction,
    reading: int,
    options: Sequence[str],
    rejection_strings: Sequence[str],
) -> tuple[Extraction, str]:
    """The extraction with the fallback's reading applied, and who read it (rules|fallback).

    A reading never changes what the rules read: only an unparsed extraction takes it.
    """
    if rules.parsed or reading == NOT_ASKED:
        return rules, "rules"
    if reading < 0 or reading >= OPTION_CODES_START + len(options):
        raise ValueError(f"a fallback reading of {len(options)} options is 0-{4 + len(options)}")
    if reading == FAILED:
        return Extraction(None, False, f"{rules.reason} [fallback failed]"), "rules"
    if reading in (NONE, REFUSAL):
        word = "none" if reading == NONE else "refusal"
        return Extraction(None, False, f"{rules.reason} [fallback: {word}]"), "rules"
    if reading == REJECTION:
        index = rejection_index(options, rejection_strings)
        if index is None:
            return Extraction(
                None, True, "fallback: rejection, but the item has no rejection option"
            ), "fallback"
        return Extraction(index, True, f"fallback: rejection -> option {options[index]!r}"), (
            "fallback"
        )
    index = reading - OPTION_CODES_START
    return Extraction(index, True, f"fallback: letter ({chr(ord('a') + index)})"), "fallback"


def fallback_settings(metadata: Mapping) -> dict | None:
    """The run's fallback settings, checked; ValueError naming the key. None: no fallback.

    The fallback is on exactly when the extractor is `aqua-rules+llm`, and then needs a
    model (and, for the endpoint backend, a base_url): settings for it under another
    extractor would be ignored silently, so they are an error too.
    """
    extractor = str(metadata.get("extractor") or "").strip().lower()
    settings = metadata.get("fallback")
    if extractor != FALLBACK_EXTRACTOR:
        if settings is not None:
            raise ValueError(
                f"fallback: settings given but extractor is {extractor or 'aqua-rules'!r}; set "
                f'"extractor": "{FALLBACK_EXTRACTOR}" to use the LLM fallback'
            )
        return None
    if not isinstance(settings, Mapping):
        raise ValueError(
            f'extractor {FALLBACK_EXTRACTOR} needs "fallback": {{"base_url": ..., "model": ...}} '
            '(or {"backend": "hf", "model": FOLDER})'
        )
    unknown = sorted(set(settings) - set(FALLBACK_SETTING_NAMES))
    if unknown:
        raise ValueError(
            f"fallback.{unknown[0]}: unknown setting; known: {', '.join(FALLBACK_SETTING_NAMES)}"
        )
    if not settings.get("model"):
        raise ValueError("fallback.model: missing (the server's model name, or a local folder)")
    backend = str(settings.get("backend") or "openai")
    if backend not in FALLBACK_BACKENDS:
        raise ValueError(f"fallback.backend: {backend!r}, expected one of openai, hf")
    if backend == "openai" and not settings.get("base_url"):
        raise ValueError(
            "fallback.base_url: missing (the full chat-completions URL, e.g. "
            "http://localhost:8000/v1/chat/completions)"
        )
    return dict(settings)


def fallback_model(settings: Mapping) -> str:
    """The fallback model as a run records it: `backend:model`."""
    return f"{settings.get('backend') or 'openai'}:{settings['model']}"
