"""Chat backends a prompted judge asks: an OpenAI-compatible endpoint, or a local HF model.

Both answer a chat with its reply text and token usage. The endpoint goes through
`eval_common.http` (kept-alive connections; retries with backoff on 429 with `Retry-After`,
5xx and timeouts), as `openai-audio-chat` does; a 200 without text is a failed attempt, retried.
"""

from __future__ import annotations

import os
import random
import threading
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from eval_common.http import (
    HttpSession,
    RequestFailure,
    RetryPolicy,
    post_with_retries,
    redact,
    usage_tokens,
)
from orca_judge.errors import LlmJudgeError
from orca_judge.prompted.settings import LlmJudgeSettings


@dataclass(frozen=True)
class ChatReply:
    """One reply: its text and the tokens it cost (the server's `usage`)."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0


@dataclass
class TransportStats:
    """HTTP retries of a backend, by reason (429, 5xx, timeout, ...)."""

    retries: int = 0
    by_reason: Counter = field(default_factory=Counter)


class ChatBackend(Protocol):
    """Something that answers a chat with one reply."""

    stats: TransportStats
    secret: str | None

    def complete(self, messages: list[dict[str, str]], stop: threading.Event) -> ChatReply:
        """The reply; RequestFailure when it could not be had after retries."""
        ...

    def close(self) -> None:
        """Release connections or the loaded model."""
        ...


class OpenAIChatBackend:
    """An OpenAI-compatible chat-completions endpoint (a hosted model, vLLM, a local stub)."""

    def __init__(self, settings: LlmJudgeSettings, sleep: Any = None) -> None:
        self.settings = settings
        self.url = str(settings.base_url)
        self.secret = os.environ.get(settings.api_key_env) or None
        self.headers = {"Authorization": f"Bearer {self.secret}"} if self.secret else {}
        self.policy = RetryPolicy(max_retries=settings.max_retries)
        self.sleep = sleep
        self.stats = TransportStats()
        self._lock = threading.Lock()
        self._rng = random.Random(0)
        self._http = HttpSession(settings.timeout, settings.concurrency)

    def _count(self, failure: RequestFailure) -> None:
        with self._lock:
            self.stats.retries += 1
            self.stats.by_reason[failure.reason] += 1

    def _read(self, reply: dict[str, Any]) -> ChatReply:
        choices = reply.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, dict) else None
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(content, str):
            raise RequestFailure(
                redact(f"reply has no choices[0].message.content: {str(reply)[:200]}", self.secret),
                retryable=True,
                reason="no content",
            )
        usage = reply.get("usage")
        return ChatReply(
            content, usage_tokens(usage, "prompt_tokens"), usage_tokens(usage, "completion_tokens")
        )

    def complete(self, messages: list[dict[str, str]], stop: threading.Event) -> ChatReply:
        """One chat completion at temperature 0, with the HTTP client's retries."""
        body = {
            "model": self.settings.model,
            "messages": messages,
            "temperature": 0,
            "max_tokens": self.settings.max_tokens,
        }
        extra = {"sleep": self.sleep} if self.sleep is not None else {}
        reply, _ = post_with_retries(
            lambda: self._read(self._http.post_json(self.url, body, self.headers)),
            self.policy,
            rng=self._rng,
            on_retry=self._count,
            stop=stop.is_set,
            **extra,
        )
        return reply

    def close(self) -> None:
        """Close the kept connections."""
        self._http.close()


class HFChatBackend:
    """A local chat model folder through transformers' chat template (greedy decoding)."""

    def __init__(self, settings: LlmJudgeSettings) -> None:
        if not Path(settings.model).is_dir():
            # Checked here: transformers would read a missing folder as a Hub repository id.
            raise LlmJudgeError(
                f"llm_judge backend hf: model {settings.model!r} is not a folder (a local chat "
                "model with its config, weights, tokenizer and chat template; nothing is "
                "downloaded)"
            )
        self.settings = settings
        self.secret = None
        self.stats = TransportStats()
        # The tokenizer is read now (cheap), so a folder that cannot chat is refused before
        # any item is asked; the model loads on the first ask.
        self._tokenizer = self._chat_tokenizer(settings.model)
        self._loaded: tuple[Any, Any] | None = None
        self._lock = threading.Lock()

    @staticmethod
    def _chat_tokenizer(path: str) -> Any:
        from transformers import AutoTokenizer

        try:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=True)
        except (OSError, ValueError) as error:
            raise LlmJudgeError(
                f"llm_judge backend hf: cannot read a tokenizer from {path}: "
                f"{str(error).splitlines()[0] if str(error) else type(error).__name__}"
            ) from None
        if not getattr(tokenizer, "chat_template", None):
            raise LlmJudgeError(
                f"llm_judge backend hf: {path} has no chat template (a chat or instruct model "
                "has one in tokenizer_config.json or chat_template.jinja); choose such a model"
            )
        return tokenizer

    def _load(self) -> tuple[Any, Any]:
        from transformers import AutoModelForCausalLM

        if self._loaded is None:
            model = AutoModelForCausalLM.from_pretrained(self.settings.model, local_files_only=True)
            self._loaded = (self._tokenizer, model.to(self.settings.device or "cpu").eval())
        return self._loaded

    def complete(self, messages: list[dict[str, str]], stop: threading.Event) -> ChatReply:
        """A greedy reply to the chat template's prompt."""
        import torch

        with self._lock:  # one generation at a time: the model is not thread-safe
            tokenizer, model = self._load()
            ids = tokenizer.apply_chat_template(
                messages, add_generation_prompt=True, return_tensors="pt", return_dict=True
            ).to(model.device)
            with torch.no_grad():
                out = model.generate(
                    **ids,
                    max_new_tokens=self.settings.max_tokens,
                    do_sample=False,
                    pad_token_id=tokenizer.pad_token_id or tokenizer.eos_token_id,
                )
        prompt = ids["input_ids"].shape[1]
        text = tokenizer.decode(out[0, prompt:], skip_special_tokens=True)
        return ChatReply(text, int(prompt), int(out.shape[1] - prompt))

    def close(self) -> None:
        """Drop the loaded model."""
        self._loaded = None


def make_backend(settings: LlmJudgeSettings, sleep: Any = None) -> ChatBackend:
    """The backend the settings name."""
    if settings.backend == "hf":
        return HFChatBackend(settings)
    return OpenAIChatBackend(settings, sleep=sleep)


def form_problem(
    backend: ChatBackend,
    messages: list[dict[str, str]],
    problem_of: Callable[[str], str | None],
    re_ask: Callable[[list[dict[str, str]], str, str], list[dict[str, str]]],
    attempts: int,
) -> str | None:
    """Ask until a reply is in the form asked for (`problem_of(text)` None), re-asking with the
    problem, at most `attempts` times: None when one was, else the last problem. A request
    that fails raises its RequestFailure. The one test ask of a client made before a run's
    first generation (the LLM fallback's reader, `metric: llm_judge`)."""
    problem = "no reply"
    for _ in range(attempts):
        text = backend.complete(messages, threading.Event()).text
        problem = problem_of(text)
        if problem is None:
            return None
        messages = re_ask(messages, text, problem)
    return problem
