"""IAQD questions written by a chat model: an OpenAI-compatible endpoint or a local HF model.

Every reply is cached on disk before it is used (an interrupted build rerun asks only for
what is missing), parsed and validated; a rejected reply is answered with the reason and
asked again, up to `max_attempts`, after which the builder falls back to the template.
"""

from __future__ import annotations

import os
import random
import threading
from pathlib import Path
from typing import Any, Protocol

from aqua_tasks.build.iaqd import (
    IaqdOutcome,
    IaqdRequest,
    InvalidDraft,
    choices_text,
    parse_reply,
    validate_draft,
)
from aqua_tasks.errors import BuildError
from eval_common.durable_jsonl import cache_root
from eval_common.http import HttpSession, RequestFailure, RetryPolicy, post_with_retries
from eval_common.reply_cache import ReplyCache, cache_file_name, cache_key

SYSTEM_PROMPT = (
    "You write unanswerable variants of multiple-choice questions about audio clips for a "
    "benchmark that tests whether a model notices that a question cannot be answered."
)
USER_PROMPT = """Original question about an audio clip: {question}
Original choices: {choices}

Write a NEW question about the same clip that asks for something no audio recording can reveal \
(for example the brand of a device, a colour, a price, a person's name, a city or a date), with \
exactly four plausible options. The options must be distinct, must not repeat any original \
choice, and must not be a rejection such as "Unanswerable" or "None of the above". Do not list \
the options inside the question.

Reply with JSON only: {{"question": "...", "options": ["...", "...", "...", "..."], \
"attribute": "<one word naming what is asked, e.g. brand>"}}"""
RETRY_PROMPT = (
    "That reply is not usable ({reason}). Reply again with JSON only, following every rule."
)


def first_messages(request: IaqdRequest) -> list[dict[str, str]]:
    """The chat that asks for one item's IAQD question."""
    user = USER_PROMPT.format(question=request.question, choices=choices_text(request.choices))
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


class ChatBackend(Protocol):
    """Something that answers a chat with one text reply."""

    def identity(self) -> dict[str, Any]:
        """What decides its replies (model, decoding): part of every cache key."""
        ...

    def complete(self, messages: list[dict[str, str]]) -> str:
        """The reply text; RequestFailure when it could not be had."""
        ...

    def close(self) -> None:
        """Release what it holds (connections, a loaded model); called when the build is done."""
        ...


class OpenAIChat:
    """Any OpenAI-compatible chat-completions endpoint (vLLM, a hosted model)."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        temperature: float = 0.0,
        max_tokens: int = 400,
        timeout: float = 60.0,
        policy: RetryPolicy | None = None,
        sleep: Any = None,
        connections: int = 1,
    ) -> None:
        if not base_url or not model:
            raise BuildError("--iaqd openai needs --base-url and --model")
        self.base_url, self.model = base_url, model
        self.api_key = api_key if api_key is not None else os.environ.get("OPENAI_API_KEY")
        self.temperature, self.max_tokens, self.timeout = temperature, max_tokens, timeout
        self.policy = policy or RetryPolicy()
        self.sleep = sleep
        self.http_retries = 0
        self._count_lock = threading.Lock()  # complete() runs in the builder's threads
        # Kept-alive connections, one per builder thread (`connections`); see close().
        self._http = HttpSession(timeout, connections)

    def identity(self) -> dict[str, Any]:
        """Model and decoding (not the URL or key: a moved server keeps its cache)."""
        return {
            "kind": "openai",
            "model": self.model,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def complete(self, messages: list[dict[str, str]]) -> str:
        """One chat completion with the HTTP client's retries."""
        body = {
            "model": self.model,
            "messages": messages,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }
        headers = {"Authorization": f"Bearer {self.api_key}"} if self.api_key else {}
        extra = {"sleep": self.sleep} if self.sleep is not None else {}
        reply, retries = post_with_retries(
            lambda: self._http.post_json(self.base_url, body, headers),
            self.policy,
            rng=random.Random(0),
            **extra,
        )
        with self._count_lock:
            self.http_retries += retries
        try:
            return str(reply["choices"][0]["message"]["content"] or "")
        except (KeyError, IndexError, TypeError):
            raise RequestFailure("reply has no choices[0].message.content") from None

    def close(self) -> None:
        """Close the kept connections (the build is done)."""
        self._http.close()


class HFChat:
    """A local chat model through transformers (greedy); loaded on first use, asked one item
    at a time (the builder gives it concurrency 1)."""

    def __init__(self, model: str, *, max_new_tokens: int = 400, device: str = "cpu") -> None:
        if not model:
            raise BuildError("--iaqd hf needs --model (a local model folder)")
        if not Path(model).is_dir():
            # Checked here: transformers would read a missing folder as a Hub repository id.
            raise BuildError(
                f"--iaqd hf --model {model!r}: no such folder (a local chat model folder with "
                "its config, weights and tokenizer; nothing is downloaded)"
            )
        self.model_path, self.max_new_tokens, self.device = model, max_new_tokens, device
        self._loaded: tuple[Any, Any] | None = None

    def identity(self) -> dict[str, Any]:
        """The model folder and decoding."""
        return {
            "kind": "hf",
            "model": self.model_path,
            "max_new_tokens": self.max_new_tokens,
            "decoding": "greedy",
        }

    def complete(self, messages: list[dict[str, str]]) -> str:
        """A greedy reply from the chat template's prompt."""
        import torch  # lazily: the other generators need neither torch nor transformers
        from transformers import AutoModelForCausalLM, AutoTokenizer

        if self._loaded is None:
            tokenizer = AutoTokenizer.from_pretrained(self.model_path, local_files_only=True)
            model = AutoModelForCausalLM.from_pretrained(self.model_path, local_files_only=True)
            self._loaded = (tokenizer, model.to(self.device).eval())
        tokenizer, model = self._loaded
        ids = tokenizer.apply_chat_template(
            messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
        ).to(self.device)
        with torch.no_grad():
            out = model.generate(
                **ids,
                max_new_tokens=self.max_new_tokens,
                do_sample=False,
                pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
            )
        return tokenizer.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)

    def close(self) -> None:
        """Drop the loaded model (the build is done)."""
        self._loaded = None


def default_build_cache_dir() -> Path:
    """`$AQUA_CACHE_DIR/build-iaqd`, else under `$XDG_CACHE_HOME/aqua-bench-eval/`."""
    return cache_root("build-iaqd")


class ChatGenerator:
    """IAQD drafts from a chat backend: cached replies, validation, retries with the reason."""

    def __init__(
        self,
        name: str,
        backend: ChatBackend,
        cache_dir: str | Path | None = None,
        max_attempts: int = 3,
        concurrency: int = 1,
    ) -> None:
        if max_attempts < 1:
            raise BuildError(f"max_attempts={max_attempts}: expected 1 or more")
        if concurrency < 1:
            raise BuildError(f"concurrency={concurrency}: expected 1 or more")
        self.name, self.backend, self.max_attempts = name, backend, max_attempts
        # Items asked about at once; not in settings(): it never changes what is written.
        self.concurrency = concurrency
        folder = Path(cache_dir) if cache_dir else default_build_cache_dir()
        self.cache = ReplyCache(folder / cache_file_name(str(backend.identity()["model"])))

    def settings(self) -> dict[str, Any]:
        """Backend, prompts and attempts (the prompts are recorded whole)."""
        return {
            **self.backend.identity(),
            "max_attempts": self.max_attempts,
            "system_prompt": SYSTEM_PROMPT,
            "user_prompt": USER_PROMPT,
            "retry_prompt": RETRY_PROMPT,
            "cache_file": self.cache.path.name,
        }

    def _reply(self, messages: list[dict[str, str]]) -> tuple[str, bool]:
        key = cache_key(
            {"purpose": "aqua-build-iaqd", **self.backend.identity(), "messages": messages}
        )
        hit = self.cache.get(key)
        if hit is not None:
            return str(hit["reply"]), True
        text = self.backend.complete(messages)
        self.cache.put(key, {"reply": text})
        return text, False

    def close(self) -> None:
        """Release the backend's connections or model."""
        self.backend.close()

    def generate(self, request: IaqdRequest, rng: random.Random) -> IaqdOutcome:
        """Ask, validate, ask again with the reason; an outcome without a draft if all fail."""
        messages = first_messages(request)
        outcome = IaqdOutcome(None, attempts=0)
        for _ in range(self.max_attempts):
            outcome.attempts += 1
            try:
                text, cached = self._reply(messages)
            except RequestFailure as failure:
                if failure.fatal:
                    raise BuildError(f"{self.name} endpoint: {failure.message}") from None
                outcome.failures.append("request_failed")
                return outcome
            outcome.cached += cached
            try:
                outcome.draft = validate_draft(parse_reply(text), request)
                return outcome
            except InvalidDraft as invalid:
                outcome.failures.append(invalid.reason)
                messages = [
                    *messages,
                    {"role": "assistant", "content": text},
                    {"role": "user", "content": RETRY_PROMPT.format(reason=invalid)},
                ]
        return outcome
