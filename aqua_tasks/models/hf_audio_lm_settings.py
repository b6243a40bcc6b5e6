"""`aqua-audiolm`'s model arguments, checked once: what to load, how to batch, where replies go.

lm-eval hands model arguments over as strings (`--model_args batch_size=8,...`); this module
turns them into typed settings and refuses bad ones with a message naming the argument.
Choices that depend on the machine (device, dtype, process group) are made at load time.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aqua_tasks.errors import ModelArgumentError
from aqua_tasks.models.data_parallel import parse_max_memory
from aqua_tasks.models.model_args import checked_device, checked_pretrained, positive_int
from aqua_tasks.models.reply_journal import default_cache_dir
from eval_common.cli import parse_bool

# reply_cache values that turn the reply journal off.
JOURNAL_OFF = ("off", "false", "no", "none", "0")
# Why there is no batch_size=auto: a batch that runs out of memory is halved as it runs.
NO_AUTO_BATCH = (
    "batch_size={value!r}: aqua-audiolm takes an integer >= 1, not 'auto' (a batch that runs "
    "out of memory is halved and the run goes on, so start high, e.g. batch_size=16)"
)


def batch_size_of(value: object) -> int:
    """`batch_size` as an integer >= 1; `auto` is refused saying why and what to give."""
    if str(value).strip().lower().startswith("auto"):
        raise ModelArgumentError(NO_AUTO_BATCH.format(value=value))
    return positive_int("batch_size", value)


@dataclass(frozen=True)
class AudioLMSettings:
    """The checked model arguments of one `aqua-audiolm`."""

    pretrained: str  # Hub id or local folder
    device: str | None  # asked for; resolved when the model is placed
    dtype: str | None  # asked for; resolved for the device
    batch_size: int
    max_gen_toks: int | None  # None: each task's own limit
    trust_remote_code: bool
    system_prompt: str | None
    revision: str | None
    device_map: str | None
    max_memory: dict[int | str, str] | None  # accelerate's mapping; only with device_map
    reply_cache: str  # "auto", a folder, or one of JOURNAL_OFF

    @classmethod
    def from_model_args(
        cls,
        *,
        pretrained: str | None,
        device: str | None,
        dtype: str | None,
        batch_size: int | str,
        max_gen_toks: int | str | None,
        trust_remote_code: bool | str,
        system_prompt: str | None,
        revision: str | None,
        device_map: str | None,
        max_memory: str | None,
        reply_cache: str | None,
    ) -> AudioLMSettings:
        """Settings from raw model arguments; ModelArgumentError naming the first bad one."""
        if not pretrained:
            raise ModelArgumentError(
                "aqua-audiolm needs a model: --model_args pretrained=<hub id or folder>"
            )
        batch = batch_size_of(batch_size)
        max_new = None if max_gen_toks is None else positive_int("max_gen_toks", max_gen_toks)
        memory = parse_max_memory(max_memory)
        if memory is not None and not device_map:
            raise ModelArgumentError("max_memory=... needs device_map (e.g. device_map=auto)")
        from eval_common.devices import DTYPES  # torch: only once the cheap checks passed

        if dtype is not None and str(dtype).strip().lower() not in DTYPES:
            raise ModelArgumentError(f"dtype={dtype!r}: expected one of {', '.join(DTYPES)}")
        trust = parse_bool("trust_remote_code", trust_remote_code, ModelArgumentError)
        return cls(
            pretrained=checked_pretrained(pretrained),
            device=None if device_map else checked_device(device),
            dtype=dtype,
            batch_size=batch,
            max_gen_toks=max_new,
            trust_remote_code=trust,
            system_prompt=system_prompt or None,
            revision=revision,
            device_map=device_map or None,
            max_memory=memory,
            reply_cache=str(reply_cache if reply_cache is not None else "auto").strip(),
        )

    @property
    def load_args(self) -> dict[str, Any]:
        """What every `from_pretrained` call of the checkpoint gets."""
        return {"revision": self.revision, "trust_remote_code": self.trust_remote_code}

    def journal_folder(self) -> Path | None:
        """Where the reply journal goes (None: reply_cache=off); `auto` is the default folder."""
        choice = self.reply_cache.lower()
        if choice in JOURNAL_OFF:
            return None
        folder = default_cache_dir() if choice in ("auto", "") else Path(self.reply_cache)
        return folder.expanduser()
