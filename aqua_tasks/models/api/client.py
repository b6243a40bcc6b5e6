"""`openai-audio-chat`: an lm-eval model class for OpenAI-compatible chat servers that hear audio.

Hosted audio chat models (`input_audio` parts) and vLLM's OpenAI-compatible server (`vllm
serve Qwen/Qwen2-Audio-7B-Instruct`, Qwen2.5-Omni, Ultravox; `input_audio` or `audio_url`).
Each request sends its clip as a 16 kHz mono WAV, made once per clip file (wav_cache.py).
Requests run concurrently, are retried with backoff, and every completed reply is cached on
disk as it arrives; a request that still fails becomes a `failed_reply` (scored unparsed
`error`), and the run goes on.
"""

from __future__ import annotations

import inspect
import json
import os
import random
import sys
import threading
import urllib.parse
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import FIRST_EXCEPTION, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from lm_eval.api.instance import Instance
from lm_eval.api.model import LM

from aqua_tasks.core.generation_failure import failed_reply
from aqua_tasks.core.generation_limit import limited_reply
from aqua_tasks.errors import EndpointError, ModelArgumentError
from aqua_tasks.models.api.payload import (
    AUDIO_FORMATS,
    audio_part,
    chat_messages,
    digest_part,
)
from aqua_tasks.models.api.wav_cache import WavCache, WavPrefetch
from aqua_tasks.models.audio_prompts import cut_at_stop, request_clips
from aqua_tasks.models.model_args import (
    ArgsThroughArgObj,
    bounded_int,
    finite_number,
    harness_settings,
    positive_int,
    refuse_unknown,
)
from eval_common.cli import parse_bool, progress
from eval_common.http import (
    HttpSession,
    RequestFailure,
    RetryPolicy,
    post_with_retries,
    redact,
    usage_tokens,
)
from eval_common.reply_cache import ReplyCache, cache_file_name, cache_key, default_cache_dir

NAME = "openai-audio-chat"
DEFAULT_MAX_GEN_TOKS = 256
TOKEN_LIMIT_FIELDS = ("max_tokens", "max_completion_tokens")
FAILURES_LISTED = 20  # failed items named on stderr; all of them are in the results file


@dataclass
class ApiRunStats:
    """What one run cost and how it went; recorded in the results file's `config`."""

    requests: int = 0
    from_cache: int = 0
    sent: int = 0
    failed: int = 0
    retries: int = 0
    retries_by_reason: Counter = field(default_factory=Counter)
    prompt_tokens: int = 0
    completion_tokens: int = 0
    failed_items: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        """JSON-ready figures (failed items sorted by task and doc id)."""
        return {
            "requests": self.requests,
            "from_cache": self.from_cache,
            "sent": self.sent,
            "failed": self.failed,
            "retries": self.retries,
            "retries_by_reason": dict(sorted(self.retries_by_reason.items())),
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "failed_items": sorted(self.failed_items, key=lambda f: (f["task"], f["doc_id"])),
        }


def check_base_url(base_url: object) -> str:
    """The chat-completions URL, or a ValueError saying what a full URL looks like."""
    url = str(base_url or "")
    parsed = urllib.parse.urlsplit(url)
    if parsed.scheme not in ("http", "https") or not parsed.netloc:
        raise ModelArgumentError(
            f"{NAME} needs base_url=<the full chat-completions URL>, e.g. "
            f"http://localhost:8000/v1/chat/completions; got {url!r}"
        )
    if parsed.path.rstrip("/").endswith("/v1") or parsed.path in ("", "/"):
        raise ModelArgumentError(
            f"base_url={url!r} is the server's root; give the full chat-completions URL: "
            f"{url.rstrip('/')}{'' if parsed.path.rstrip('/') else '/v1'}/chat/completions"
        )
    return url


def public_url(url: str) -> str:
    """`url` without user:password or query (both may hold credentials), for records."""
    parsed = urllib.parse.urlsplit(url)
    host = parsed.hostname or ""
    netloc = f"{host}:{parsed.port}" if parsed.port else host
    return urllib.parse.urlunsplit((parsed.scheme, netloc, parsed.path, "", ""))


def _close_when_done(futures: Iterable[Future], session: HttpSession) -> None:
    wait(futures)
    session.close()


class OpenAIAudioChatLM(ArgsThroughArgObj, LM):
    """Replies from an OpenAI-compatible chat-completions server, clips sent as WAV parts.

    Not built on lm-eval's `TemplateAPI` (`local-chat-completions`): it forwards images only
    (`create_image_prompt`) and stops the run once a request's retries are spent; this class
    sends WAV parts over kept-alive connections, honours `Retry-After`, counts retries by
    reason, caches each reply as it arrives and turns a request that still fails into a
    `failed_reply` so the run goes on.
    """

    MULTIMODAL = True  # lm-eval refuses audio tasks for models without this flag
    # CLI-level settings lm-eval passes to every model; a chat request holds one conversation.
    HARNESS_ARGS = ("batch_size", "max_batch_size", "device")
    # It needs audio: a text-only run is refused before it starts (refuse_text_only_run).
    AUDIO_MODEL = NAME
    TEXT_ONLY_MODEL = "lm-eval's local-chat-completions"

    def __init__(
        self,
        base_url: str | None = None,
        model: str | None = None,
        num_concurrent: int | str = 1,
        max_retries: int | str = 5,
        timeout: float | str = 120.0,
        audio_format: str = "input_audio",
        system_prompt: str | None = None,
        max_gen_toks: int | str | None = None,
        temperature: float | str | None = 0.0,
        top_p: float | str | None = None,
        seed: int | str | None = None,
        token_limit_field: str = "max_tokens",
        api_key_env: str = "OPENAI_API_KEY",
        cache: bool | str = True,
        cache_dir: str | None = None,
        backoff_base: float | str = 1.0,
        backoff_max: float | str = 60.0,
        batch_size: object = None,
        max_batch_size: object = None,
        device: object = None,
    ) -> None:
        super().__init__()
        self.base_url = check_base_url(base_url)
        if not model:
            raise ModelArgumentError(
                f"{NAME} needs model=<the server's model name>, e.g. "
                "model=Qwen/Qwen2-Audio-7B-Instruct for `vllm serve Qwen/Qwen2-Audio-7B-Instruct`"
            )
        self.model = str(model)
        self.num_concurrent = positive_int("num_concurrent", num_concurrent)
        # A day at most: a larger timeout overflows the socket layer at the first request.
        self.timeout = finite_number("timeout", timeout, maximum=86400, open_interval=True)
        if audio_format not in AUDIO_FORMATS:
            raise ModelArgumentError(
                f"audio_format={audio_format!r}: expected one of {', '.join(AUDIO_FORMATS)}"
            )
        self.audio_format = audio_format
        self.system_prompt = str(system_prompt) if system_prompt else None
        self.max_gen_toks = (
            None if max_gen_toks is None else positive_int("max_gen_toks", max_gen_toks)
        )
        self.sampling: dict[str, Any] = {}
        if temperature is not None:  # `temperature=none` for models that refuse the field
            self.sampling["temperature"] = finite_number("temperature", temperature)
        if top_p is not None:
            self.sampling["top_p"] = finite_number("top_p", top_p, maximum=1)
        if seed is not None:
            self.sampling["seed"] = bounded_int("seed", seed)
        if token_limit_field not in TOKEN_LIMIT_FIELDS:
            raise ModelArgumentError(
                f"token_limit_field={token_limit_field!r}: expected one of "
                f"{', '.join(TOKEN_LIMIT_FIELDS)}"
            )
        self.token_limit_field = token_limit_field
        self.policy = RetryPolicy(
            max_retries=bounded_int("max_retries", max_retries),
            backoff_base=finite_number("backoff_base", backoff_base),
            backoff_max=finite_number("backoff_max", backoff_max),
        )
        self.api_key_env = str(api_key_env)
        # Read once; kept out of every attribute lm-eval or a logger might print.
        self._headers = self._auth_headers()
        self._secret = self._headers.get("Authorization", "").removeprefix("Bearer ") or None
        self.cache: ReplyCache | None = None
        if parse_bool("cache", cache, ModelArgumentError):
            folder = Path(os.path.expanduser(str(cache_dir))) if cache_dir else default_cache_dir()
            self.cache = ReplyCache(
                folder / cache_file_name(self.model), check=self._cached_reply_problem
            )
            if self.cache.skipped_lines:
                print(
                    f"{NAME}: ignored {self.cache.skipped_lines} unreadable line(s) of "
                    f"{self.cache.path} (a write cut off by a crash); those requests are re-sent",
                    file=sys.stderr,
                )
            if self.cache.refused:
                print(f"{NAME}: {self.cache.refusal_note()}", file=sys.stderr)
        self.stats = ApiRunStats()
        self.wav_cache = WavCache()  # a clip asked several times is made into WAV once
        self._stats_lock = threading.Lock()
        self._rng = random.Random()
        self._reached = threading.Event()  # set by the first reply the server sends

    def _cached_reply_problem(self, entry: Mapping[str, Any]) -> str | None:
        """Why a cache entry is not a reply of this model (None: it is)."""
        if entry.get("model") != self.model:
            return f"model {entry.get('model')!r}, not {self.model!r}"
        if not isinstance(entry.get("reply"), str):
            return f"reply {entry.get('reply')!r} is not text"
        return None

    def _auth_headers(self) -> dict[str, str]:
        key = os.environ.get(self.api_key_env, "").strip()
        return {"Authorization": f"Bearer {key}"} if key else {}

    def __repr__(self) -> str:
        return (
            f"{type(self).__name__}(model={self.model!r}, base_url={public_url(self.base_url)!r})"
        )

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        """Build from a dict of model args; unknown names are one clear error."""
        known = set(inspect.signature(cls.__init__).parameters) - {"self"}
        refuse_unknown(NAME, arg_dict, known - set(cls.HARNESS_ARGS))
        return cls(**arg_dict, **harness_settings(cls.HARNESS_ARGS, arg_dict, additional_config))

    @classmethod
    def check_model_args(cls, arg_dict: dict, additional_config: dict | None = None) -> None:
        """ModelArgumentError for the first bad model argument; sends and opens nothing."""
        parse_bool("cache", arg_dict.get("cache", True), ModelArgumentError)
        # The constructor only checks and stores, apart from opening the reply cache.
        cls.create_from_arg_obj({**arg_dict, "cache": False}, additional_config)

    # lm-eval's --apply_chat_template: the history travels as JSON to generate_until.
    @property
    def tokenizer_name(self) -> str:
        """Name lm-eval records for --apply_chat_template runs."""
        return f"{NAME}:{self.model}".replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str:
        """The server applies its own template; nothing to record here."""
        return ""

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """The chat history as JSON; generate_until sends it as the request's messages."""
        return json.dumps([dict(turn) for turn in chat_history], ensure_ascii=False)

    def get_model_info(self) -> dict[str, Any]:
        """Recorded by lm-eval in the results file's `config`: endpoint, settings, usage."""
        return {
            "api_endpoint": public_url(self.base_url),
            "api_model": self.model,
            "api_usage": self.stats.as_dict(),
            "api_reply_cache": str(self.cache.path) if self.cache is not None else None,
        }

    def _settings(self, gen_kwargs: Mapping[str, Any]) -> tuple[list[str], int]:
        until = gen_kwargs.get("until", [])
        until = [until] if isinstance(until, str) else [s for s in until or [] if s]
        limit = self.max_gen_toks or positive_int(
            "max_gen_toks", gen_kwargs.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS)
        )
        return until, limit

    @classmethod
    def _clips(cls, request: Instance) -> list[Mapping[str, Any]]:
        return request_clips(request, NAME, cls.TEXT_ONLY_MODEL)

    def _body(
        self,
        context: str,
        wavs: list[bytes],
        gen_kwargs: Mapping[str, Any],
        render: Callable[[bytes, str], dict[str, Any]],
    ) -> dict[str, Any]:
        """The request body; `render` turns each clip into a content part."""
        until, limit = self._settings(gen_kwargs)
        messages = chat_messages(
            context, wavs, lambda wav: render(wav, self.audio_format), self.system_prompt
        )
        body: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            self.token_limit_field: limit,
            **self.sampling,
        }
        if until:
            body["stop"] = until
        return body

    def _answer(
        self,
        request: Instance,
        stop: threading.Event,
        session: HttpSession,
        prefetch: WavPrefetch | None = None,
    ) -> str:
        """The reply to one request: from the cache, from the server, or a failed_reply."""
        if prefetch is not None:
            prefetch.started()
        context, gen_kwargs = request.args[0], request.args[1] or {}
        wavs = []
        for clip in self._clips(request):
            try:
                wavs.append(self.wav_cache.wav(clip))
            except (OSError, ValueError) as error:
                where = clip.get("path") or "the request's audio array"
                return self._failed(request, f"audio not sent ({where}): {error}")
        # The key is the body with digests for the clips: everything that decides a reply.
        key = cache_key({"body": self._body(context, wavs, gen_kwargs, digest_part)})
        cached = self.cache.get(key) if self.cache is not None else None
        if cached is not None:
            with self._stats_lock:
                self.stats.from_cache += 1
            return cached["reply"]
        if stop.is_set():
            return ""
        body = self._body(context, wavs, gen_kwargs, audio_part)
        try:
            # Read inside the retried call: a 200 without text is a failed attempt (retried,
            # never cached), not an empty answer.
            (text, usage, finish), _ = post_with_retries(
                lambda: self._reply_text(session.post_json(self.base_url, body, self._headers)),
                self.policy,
                rng=self._rng,
                on_retry=self._count_retry,
                stop=stop.is_set,
            )
        except RequestFailure as failure:
            # A server that was never reached is down or mistyped, not failing one item.
            if failure.fatal or (failure.reason == "connection" and not self._reached.is_set()):
                stop.set()
                raise
            attempts = f" ({failure.attempts} attempts)" if failure.attempts > 1 else ""
            return self._failed(request, failure.message + attempts)
        self._reached.set()
        cut = cut_at_stop(text, body.get("stop", []))
        # Cut at max_tokens (and not at a stop string): the extractor must know the reply is
        # incomplete, so it is marked (see core/generation_limit.py), cached with its marker.
        text = limited_reply(cut) if finish == "length" and cut == text else cut
        with self._stats_lock:
            self.stats.sent += 1
            self.stats.prompt_tokens += usage_tokens(usage, "prompt_tokens")
            self.stats.completion_tokens += usage_tokens(usage, "completion_tokens")
        if self.cache is not None:
            self.cache.put(key, {"model": self.model, "reply": text, "usage": usage})
        return text

    def _reply_text(self, reply: Mapping[str, Any]) -> tuple[str, dict[str, Any], str | None]:
        """The reply's text, its token usage and why generation stopped (`finish_reason`)."""
        choices = reply.get("choices")
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, Mapping) else None
        if not isinstance(message, Mapping):
            raise RequestFailure(
                redact(f"reply has no choices[0].message: {str(reply)[:200]}", self._secret)
            )
        content = message.get("content")
        if not isinstance(content, str):
            # vLLM and hosted APIs answer 200 with `content: null` when generation broke off
            # server-side; another attempt usually gives the reply.
            raise RequestFailure(
                redact(
                    f"reply has no text (choices[0].message.content is {content!r})", self._secret
                ),
                retryable=True,
                reason="no content",
            )
        usage = reply.get("usage") if isinstance(reply.get("usage"), Mapping) else {}
        finish = first.get("finish_reason")
        return content, dict(usage), finish

    def _count_retry(self, failure: RequestFailure) -> None:
        with self._stats_lock:
            self.stats.retries += 1
            self.stats.retries_by_reason[failure.reason] += 1

    def _failed(self, request: Instance, message: str) -> str:
        message = redact(message, self._secret)
        with self._stats_lock:
            self.stats.failed += 1
            self.stats.failed_items.append(
                {"task": request.task_name, "doc_id": request.doc_id, "message": message}
            )
        return failed_reply(message)

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Replies for all requests in request order; failed requests as `failed_reply`."""
        # A task without audio fails here, before anything is sent.
        clips = [self._clips(request) for request in requests]
        replies: list[str] = [""] * len(requests)
        stop = threading.Event()
        bar = progress(None, NAME, not disable_tqdm, total=len(requests), unit="req")
        # One connection per worker, kept alive for the whole run.
        session = HttpSession(self.timeout, self.num_concurrent)
        executor = ThreadPoolExecutor(max_workers=self.num_concurrent)
        futures: dict[Future, int] = {}
        prefetch = WavPrefetch(self.wav_cache, clips, lookahead=2 * self.num_concurrent)
        try:
            prefetch.start()
            for index, request in enumerate(requests):
                futures[executor.submit(self._answer, request, stop, session, prefetch)] = index
            pending = set(futures)
            while pending:
                done, pending = wait(pending, return_when=FIRST_EXCEPTION)
                for future in done:
                    error = future.exception()
                    if isinstance(error, RequestFailure):
                        raise self._endpoint_error(error) from None
                    if error is not None:
                        raise error
                    replies[futures[future]] = future.result()
                    bar.update(1)
        except BaseException:
            stop.set()
            executor.shutdown(wait=False, cancel_futures=True)
            # Requests in flight finish and are cached (Ctrl-C does not wait for them here);
            # their connections close once they are done.
            threading.Thread(target=_close_when_done, args=(futures, session), daemon=True).start()
            raise
        finally:
            prefetch.close()
            bar.close()
        executor.shutdown()
        session.close()
        with self._stats_lock:
            self.stats.requests += len(requests)
        self._print_summary()
        return replies

    def _endpoint_error(self, failure: RequestFailure) -> EndpointError:
        hint = {
            401: f"check the API key in ${self.api_key_env} (api_key_env names the variable)",
            403: f"the key in ${self.api_key_env} has no access to model {self.model!r}",
            404: "check base_url (the full chat-completions URL) and model (the server's name "
            "for it; vLLM lists them at GET /v1/models)",
        }.get(
            failure.status or 0,
            "is the server running at base_url? (vLLM takes minutes to load a model before it "
            "accepts connections)",
        )
        saved = ""
        if self.cache is not None:
            saved = f"; replies completed so far are cached in {self.cache.path}"
        return EndpointError(
            f"{NAME}: request to {public_url(self.base_url)} for model {self.model!r} failed: "
            f"{failure.message}; {hint}{saved}"
        )

    def _print_summary(self) -> None:
        s = self.stats
        reasons = ", ".join(f"{k}: {v}" for k, v in sorted(s.retries_by_reason.items()))
        print(
            f"{NAME}: {s.requests} requests: {s.sent} sent, {s.from_cache} from cache, "
            f"{s.failed} failed; {s.retries} retries{f' ({reasons})' if reasons else ''}; "
            f"tokens: {s.prompt_tokens} prompt, {s.completion_tokens} completion",
            file=sys.stderr,
        )
        if not s.failed:
            return
        items = sorted(s.failed_items, key=lambda f: (f["task"], f["doc_id"]))
        lines = [f"  {f['task']} doc {f['doc_id']}: {f['message']}" for f in items]
        more = len(lines) - FAILURES_LISTED
        print(
            f"{NAME}: {s.failed} request(s) failed after retries and are scored unparsed "
            "(reason `error`); rerunning the same command sends only these:\n"
            + "\n".join(lines[:FAILURES_LISTED])
            + (
                f"\n  … and {more} more (all in the results file, config.api_usage)"
                if more > 0
                else ""
            ),
            file=sys.stderr,
        )

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: chat endpoints return text, not log-probabilities of given text."""
        raise NotImplementedError(f"{NAME} supports only generate_until tasks")

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: chat endpoints return text, not log-probabilities of given text."""
        raise NotImplementedError(f"{NAME} supports only generate_until tasks")
