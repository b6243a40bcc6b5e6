"""Settings of a prompted judge: one typed record for `metric: llm_judge` and the commands.

Read from a metric entry, then the task's `metadata: {llm_judge: {...}}` (lm-eval's
`--metadata`); or from `key=value,...` strings on the command line. Unknown names are
errors; the API key itself is never a setting, only the name of the variable that holds it
(`api_key_env`).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from eval_common.cli import parse_bool
from orca_judge.errors import LlmJudgeError

METRIC = "llm_judge"
BACKENDS = ("openai", "hf")
HARNESS_KEYS = frozenset({"metric", "aggregation", "higher_is_better", "hf_evaluate"})
LM_EVAL_METADATA_HINT = '--metadata \'{"llm_judge": {"base_url": ..., "model": ...}}\''
LMMS_EVAL_METADATA_HINT = "`metadata: {llm_judge: {base_url: ..., model: ...}}` in the task YAML"


@dataclass(frozen=True)
class LlmJudgeSettings:
    """A prompted judge (which model, how it is asked) and which doc fields it reads."""

    model: str  # the server's model name (openai) or a local chat model folder (hf)
    backend: str = "openai"  # openai: an OpenAI-compatible endpoint; hf: transformers, local
    base_url: str | None = None  # full chat-completions URL (openai)
    api_key_env: str = "OPENAI_API_KEY"  # the variable holding the key (unset: no key sent)
    max_tokens: int = 200  # reply length limit of each ask
    timeout: float = 60.0  # seconds per network operation
    max_retries: int = 5  # HTTP retries per ask (429 with Retry-After, 5xx, timeouts)
    max_attempts: int = 3  # asks per item: the first and the re-asks after invalid replies
    concurrency: int = 4  # requests in flight (hf: always 1)
    cache: bool = True  # read and write the on-disk judgement cache
    cache_dir: str | None = None  # default: $AQUA_CACHE_DIR/llm-judge, else XDG cache
    device: str | None = None  # hf: cpu, cuda, ... (default: cpu)
    # Doc fields (metric only), as `metric: orca` reads them.
    question_field: str | None = None
    rationale_field: str = "rationale"
    transcript_field: str = "transcript"
    ratings_field: str = ""
    id_field: str = "id"
    output_dir: str | None = None

    def judge_key(self) -> tuple:
        """What identifies a judge client: everything but the doc fields and output folder."""
        return tuple(getattr(self, f.name) for f in fields(self) if f.name in JUDGE_NAMES)

    def identity(self) -> dict[str, Any]:
        """What decides a judgement (recorded with it, part of its cache key)."""
        return {
            "backend": self.backend,
            "model": self.model,
            "temperature": 0,
            "max_tokens": self.max_tokens,
            "max_attempts": self.max_attempts,
        }

    def endpoint(self) -> str | None:
        """Where the judge runs: the URL (openai) or None (a local model, named by `model`)."""
        return self.base_url if self.backend == "openai" else None


SETTING_NAMES = tuple(f.name for f in fields(LlmJudgeSettings))
JUDGE_NAMES = SETTING_NAMES[: SETTING_NAMES.index("question_field")]
_INTS = {"max_tokens": 1, "max_retries": 0, "max_attempts": 1, "concurrency": 1}
_BOOLS = ("cache",)


def _typed(name: str, value: Any, where: str) -> Any:
    if name in _BOOLS:
        try:
            return parse_bool(name, value)
        except ValueError:
            raise LlmJudgeError(f"{where}: {name}={value!r}: expected true or false") from None
    if name in _INTS:
        try:
            number = int(value)
        except (TypeError, ValueError, OverflowError):  # OverflowError: JSON's Infinity
            number = None
        if (
            number is None
            or isinstance(value, bool)
            or number < _INTS[name]
            or str(value) != str(number)
        ):
            raise LlmJudgeError(f"{where}: {name}={value!r}: expected an integer >= {_INTS[name]}")
        return number
    if name == "timeout":
        try:
            seconds = float(value)
        except (TypeError, ValueError):
            seconds = math.nan
        # A day at most: a larger timeout overflows the socket layer at the first request.
        if not (math.isfinite(seconds) and 0 < seconds <= 86400):
            raise LlmJudgeError(f"{where}: timeout={value!r}: expected seconds > 0, at most 86400")
        return seconds
    return str(value)


def build_settings(values: Mapping[str, Any], where: str, hint: str = "") -> LlmJudgeSettings:
    """Validated settings from a mapping of names to values (strings or typed)."""
    unknown = sorted(set(values) - set(SETTING_NAMES))
    if unknown:
        raise LlmJudgeError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(SETTING_NAMES)}"
        )
    typed = {k: _typed(k, v, where) for k, v in values.items() if v is not None}
    if not typed.get("model"):
        raise LlmJudgeError(f"{where}: no judge model; set `model:`{hint}")
    backend = typed.get("backend", "openai")
    if backend not in BACKENDS:
        raise LlmJudgeError(f"{where}: backend={backend!r}: expected one of {', '.join(BACKENDS)}")
    if backend == "openai" and not typed.get("base_url"):
        raise LlmJudgeError(
            f"{where}: no base_url (the full chat-completions URL, e.g. "
            f"http://localhost:8000/v1/chat/completions){hint}"
        )
    return LlmJudgeSettings(**typed)


def resolve_settings(
    entry: Mapping[str, Any],
    metadata: Mapping[str, Any] | None = None,
    where: str = "metric llm_judge",
    metadata_hint: str = LM_EVAL_METADATA_HINT,
) -> LlmJudgeSettings:
    """Settings from the entry, then metadata['llm_judge']."""
    own = {k: v for k, v in entry.items() if k not in HARNESS_KEYS}
    from_metadata = dict((metadata or {}).get(METRIC) or {})
    unknown = sorted(set(own) - set(SETTING_NAMES))
    unknown += sorted(f"metadata.llm_judge.{k}" for k in set(from_metadata) - set(SETTING_NAMES))
    if unknown:
        raise LlmJudgeError(
            f"{where}: unknown setting(s) {', '.join(unknown)}; known: {', '.join(SETTING_NAMES)}"
        )
    values: dict[str, Any] = {}
    for name in SETTING_NAMES:
        for source in (own, from_metadata):
            if source.get(name) is not None:
                values[name] = source[name]
                break
    return build_settings(values, where, f" on the metric entry or {metadata_hint}")


def parse_spec(spec: str, where: str) -> dict[str, str]:
    """`key=value,key=value` (a command-line judge spec) as a mapping; LlmJudgeError if bad."""
    values: dict[str, str] = {}
    for part in filter(None, (p.strip() for p in spec.split(","))):
        key, sep, value = part.partition("=")
        if not sep or not key.strip():
            raise LlmJudgeError(f"{where}: {part!r} is not key=value (in {spec!r})")
        values[key.strip()] = value.strip()
    return values
