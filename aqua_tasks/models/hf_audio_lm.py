"""`aqua-audiolm`: an lm-eval model class for Hugging Face audio LMs (Qwen2-Audio and kin).

Works with models whose processor takes `text=` plus `audio=` and expands one audio token
per clip (Qwen2-Audio and kin), and with Qwen2.5-Omni's thinker, whose inputs are built from
the checkpoint's parts (omni_inputs.py). Generation only, greedy, batched.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from tqdm import tqdm

from aqua_tasks.audio.checks import ClipLimits, check_clips
from aqua_tasks.audio.clips import resample
from aqua_tasks.core.generation_failure import failed_reply
from aqua_tasks.models.cache_keys import install as install_audio_cache_keys
from aqua_tasks.models.data_parallel import Collective, launched_processes, parse_max_memory
from aqua_tasks.models.omni_inputs import OmniThinkerInputs, is_omni, thinker_config
from aqua_tasks.models.reply_journal import (
    ReplyJournal,
    default_cache_dir,
    local_model_files,
    request_key,
)
from eval_common.cli import parse_bool

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

AUDIO_PLACEHOLDER = "<audio>"  # what task prompts put where a clip goes
DEFAULT_MAX_GEN_TOKS = 256
# Sampling settings a task may carry; decoding here is always greedy.
SAMPLING_KEYS = frozenset({"do_sample", "temperature", "top_p", "top_k"})
# Whisper-style encoders (Qwen2-Audio) crash inside transformers on clips of 6 mel frames or
# fewer (960 samples at 16 kHz); 7 frames (961 samples) run.
MIN_MEL_FRAMES = 7
# A run whose first items all fail is broken as a whole (wrong device, bad checkpoint):
# stop rather than record every item as a failure.
MAX_FAILURES = 10
CLIP_NOTES = {
    "silent": "are all zeros (silent; a failed conversion?)",
    "over_window": "are longer than the model's audio window; it hears only the start",
}
CLIP_COUNT_KEYS = ("clips_checked", "clips_silent", "clips_over_window")


def chat_content(text: str) -> list[dict[str, str]]:
    """A message's content parts: one audio part per `<audio>` placeholder, text around them."""
    parts: list[dict[str, str]] = []
    for k, piece in enumerate(text.split(AUDIO_PLACEHOLDER)):
        if k:
            parts.append({"type": "audio"})
            # Chat templates end an audio part with their own line break.
            piece = piece.removeprefix("\n")
        if piece:
            parts.append({"type": "text", "text": piece})
    return parts


def cut_at_stop(text: str, until: Sequence[str]) -> str:
    """`text` up to the earliest occurrence of any stop string (all of it when none occurs)."""
    cut = min((i for i in (text.find(s) for s in until if s) if i >= 0), default=len(text))
    return text[:cut]


def mono_waveform(audio: Mapping[str, Any], target_sr: int) -> np.ndarray:
    """A request's audio mapping as a float32 mono waveform at `target_sr` Hz."""
    wave = np.asarray(audio["array"], dtype=np.float32)
    if wave.ndim != 1:
        raise ValueError(f"audio arrays must be mono (1-D), got shape {wave.shape}")
    return resample(wave, int(audio["sampling_rate"]), target_sr)


def clip_limits(feature_extractor: Any) -> ClipLimits:
    """What an audio LM's feature extractor accepts: its rate, shortest and longest clip."""
    hop = int(getattr(feature_extractor, "hop_length", 160) or 160)
    window = getattr(feature_extractor, "n_samples", None)
    return ClipLimits(
        sampling_rate=int(feature_extractor.sampling_rate),
        min_samples=(MIN_MEL_FRAMES - 1) * hop + 1,
        max_samples=int(window) if window else None,
    )


def model_revision(pretrained: str, revision: str | None, cache_dir: str | None = None) -> str:
    """The Hub commit a model was loaded from, or the resolved local folder."""
    if Path(pretrained).is_dir():
        return str(Path(pretrained).resolve())
    from transformers.utils.hub import cached_file, extract_commit_hash

    try:
        # The loader already fetched config.json: this finds it in the cache's snapshot folder,
        # whose name is the commit.
        path = cached_file(pretrained, "config.json", revision=revision, cache_dir=cache_dir)
    except OSError:
        path = None
    return extract_commit_hash(path, None) or revision or "unknown"


def model_devices(model: Any, device: Any) -> list[str]:
    """Every device holding part of the model (several under device_map)."""
    placed = getattr(model, "hf_device_map", None)
    if placed:
        names = {f"cuda:{d}" if isinstance(d, int) else str(d) for d in placed.values()}
        return sorted(names)
    return [str(device)]


def peak_memory_mb(device: Any) -> dict[str, float]:
    """Peak memory of this process so far: accelerator memory on CUDA, else resident RAM."""
    import torch

    peak: dict[str, float] = {}
    if getattr(device, "type", "") == "cuda":
        for index in range(torch.cuda.device_count()):
            used = torch.cuda.max_memory_allocated(index)
            if used:  # under data parallel a rank touches only its own GPU
                peak[f"cuda:{index}"] = used / 2**20
    try:
        import resource
    except ImportError:  # not on Windows
        return {k: round(v, 1) for k, v in peak.items()}
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports kilobytes, macOS bytes.
    peak["cpu_rss"] = rss / (2**20 if sys.platform == "darwin" else 2**10)
    return {k: round(v, 1) for k, v in peak.items()}


@dataclass
class _Job:
    """One request on its way through generation."""

    index: int
    request: Instance
    prompt: str
    audio: list[Mapping[str, Any]]
    until: tuple[str, ...]
    max_new: int
    seconds: float = 0.0
    key: str = ""


def _batches(jobs: list[_Job], size: int) -> Iterator[list[_Job]]:
    """Consecutive jobs up to `size` at a time, never mixing stop settings."""
    start = 0
    while start < len(jobs):
        batch = [jobs[start]]
        while (
            len(batch) < size
            and start + len(batch) < len(jobs)
            and (jobs[start + len(batch)].until, jobs[start + len(batch)].max_new)
            == (batch[0].until, batch[0].max_new)
        ):
            batch.append(jobs[start + len(batch)])
        start += len(batch)
        yield batch


def positive_int(name: str, value: object) -> int:
    """A model argument that must be a positive integer."""
    try:
        number = int(str(value))
    except ValueError:
        number = 0
    if number <= 0:
        raise ValueError(f"{name}={value!r}: expected a positive integer")
    return number


class AudioLM(LM):
    """Greedy generation with a Hugging Face audio LM and its processor."""

    MULTIMODAL = True  # lm-eval refuses audio tasks for models without this flag
    # CLI-level settings lm-eval passes to every model (the CLI always sends batch_size=1).
    HARNESS_ARGS = ("batch_size", "max_batch_size", "device")

    def __init__(
        self,
        pretrained: str | None = None,
        device: str | None = "auto",
        dtype: str | None = "auto",
        batch_size: int | str = 1,
        max_batch_size: int | None = None,  # sent by lm-eval; no automatic batch size
        max_gen_toks: int | str | None = None,
        trust_remote_code: bool | str = False,
        system_prompt: str | None = None,
        revision: str | None = None,
        device_map: str | None = None,
        max_memory: str | None = None,
        reply_cache: str | None = "auto",
    ) -> None:
        super().__init__()
        if not pretrained:
            raise ValueError(
                "aqua-audiolm needs a model: --model_args pretrained=<hub id or folder>"
            )
        import transformers

        from eval_common.devices import resolve_device, resolve_dtype

        self.pretrained = str(pretrained)
        self.batch_size = positive_int("batch_size", batch_size)
        self.max_gen_toks = (
            None if max_gen_toks is None else positive_int("max_gen_toks", max_gen_toks)
        )
        self.system_prompt = system_prompt or None
        self._warned: set[tuple[str, ...]] = set()
        self._succeeded = False  # whether any generation of the current call worked
        self.device_map = device_map or None
        memory = parse_max_memory(max_memory)
        if memory is not None and self.device_map is None:
            raise ValueError("max_memory=... needs device_map (e.g. device_map=auto)")
        self._collective: Collective | None = None
        if launched_processes() > 1:
            if self.device_map is not None:
                raise ValueError(
                    f"device_map={self.device_map} under `accelerate launch`: use either one "
                    "process per device (data parallel) or one process over all devices "
                    "(device_map=auto), not both"
                )
            self._collective = Collective()
            self._rank = self._collective.rank
            self._world_size = self._collective.world_size
            self._device = self._collective.device  # each rank its own device
        else:
            self._device = resolve_device("auto" if self.device_map else device)
        self.dtype = resolve_dtype(dtype, self._device)
        remote = parse_bool("trust_remote_code", trust_remote_code)
        load = {"revision": revision, "trust_remote_code": remote}

        # Read first: Qwen2.5-Omni builds its inputs from the checkpoint's parts (omni_inputs.py).
        # An unreadable config is reported below, after the processor, as before.
        config = self._read_config(transformers, load)
        if config is not None and is_omni(config):
            self.processor: Any = OmniThinkerInputs.from_pretrained(self.pretrained, config, **load)
        else:
            self.processor = transformers.AutoProcessor.from_pretrained(self.pretrained, **load)
        if getattr(self.processor, "feature_extractor", None) is None:
            raise ValueError(
                f"{self.pretrained}: its processor ({type(self.processor).__name__}) has no audio "
                "feature extractor; aqua-audiolm needs an audio LM such as Qwen2-Audio"
            )
        self.audio_token = getattr(self.processor, "audio_token", None)
        if not self.audio_token:
            raise ValueError(
                f"{self.pretrained}: its processor ({type(self.processor).__name__}) defines no "
                "audio token; aqua-audiolm supports processors that expand an audio placeholder "
                "(Qwen2-Audio, Qwen2.5-Omni)"
            )
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "left"  # generation continues from the right edge
        self.sampling_rate = int(self.processor.feature_extractor.sampling_rate)
        self.clip_limits = clip_limits(self.processor.feature_extractor)

        if config is None:
            config = transformers.AutoConfig.from_pretrained(self.pretrained, **load)
        extra: dict[str, Any] = {}
        if is_omni(config):
            # Text replies need only the thinker: load it alone, whether the checkpoint holds
            # the thinker or the full Omni model (thinker weights under `thinker.`).
            model_cls = transformers.Qwen2_5OmniThinkerForConditionalGeneration
            if thinker_config(config) is not config:
                extra.update(config=thinker_config(config), key_mapping={r"^thinker\.": ""})
        else:
            model_cls = self._model_class(transformers, config)
        if getattr(config, "enable_audio_output", False) and not is_omni(config):
            extra["enable_audio_output"] = False  # other Omni models: text needs no talker
        if self.device_map is not None:
            extra.update(device_map=self.device_map, max_memory=memory)
        loaded = model_cls.from_pretrained(self.pretrained, dtype=self.dtype, **load, **extra)
        # Omni models generate text with their "thinker" sub-model.
        model = getattr(loaded, "thinker", loaded)
        if self.device_map is None:
            model = model.to(self._device)
        else:
            self._device = model.device  # where inputs go: the first layers' device
        self.model = model.eval()
        self.eos_token_ids = self._eos_ids(loaded)
        self.pad_token_id = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.eos_token_ids[0]
        )
        self.revision = model_revision(self.pretrained, revision)
        self.run_info: dict[str, Any] = {
            "model_revision": self.revision,
            "devices": model_devices(self.model, self._device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "batch_size": self.batch_size,
            "world_size": self.world_size,
        }
        self.journal = self._open_journal(reply_cache, transformers.__version__)
        logger.info(
            "aqua-audiolm: %s (%s) on %s in %s, batch size %d%s",
            self.pretrained,
            type(self.model).__name__,
            ", ".join(self.run_info["devices"]),
            self.run_info["dtype"],
            self.batch_size,
            f", rank {self.rank} of {self.world_size}" if self.world_size > 1 else "",
        )

    def _open_journal(self, reply_cache: str | None, transformers_version: str) -> Any:
        import torch

        choice = str(reply_cache if reply_cache is not None else "auto").strip()
        if choice.lower() in ("off", "false", "no", "none", "0"):
            return None
        folder = default_cache_dir() if choice.lower() in ("auto", "") else Path(choice)
        source = Path(self.pretrained)
        identity: dict[str, Any] = (
            {"path": str(source.resolve()), "files": local_model_files(source)}
            if source.is_dir()
            else {"id": self.pretrained, "revision": self.revision}
        )
        setting = {
            "class": "aqua-audiolm",
            "model": identity,
            "dtype": self.run_info["dtype"],
            "device_type": self._device.type,
            "transformers": transformers_version,
            "torch": torch.__version__,
        }
        return ReplyJournal(folder.expanduser(), setting, rank=self.rank)

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """Build from `--model_args`; its keys win over the CLI's batch_size/device defaults."""
        from lm_eval.utils import simple_parse_args_string

        return cls.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        """Build from a dict of model args; its keys win over the CLI's batch_size/device."""
        # lm-eval's CLI always sends batch_size (default 1): without this merge,
        # `--model_args ...,batch_size=8` fails with "multiple values for 'batch_size'".
        harness = {
            k: v
            for k, v in (additional_config or {}).items()
            if v is not None and k in cls.HARNESS_ARGS and k not in arg_dict
        }
        if "device" in harness:
            from eval_common.devices import resolve_device

            # lm-eval's CLI sends device=cuda:0 unless told otherwise; on a machine without
            # that device, fall back to the best one here (an explicit model_args device errors).
            try:
                resolve_device(harness["device"])
            except ValueError as error:
                logger.warning("aqua-audiolm: %s; using device=auto", error)
                harness["device"] = "auto"
        return cls(**arg_dict, **harness)

    def _read_config(self, transformers: Any, load: dict[str, Any]) -> Any:
        try:
            return transformers.AutoConfig.from_pretrained(self.pretrained, **load)
        except (OSError, ValueError):
            return None

    def _model_class(self, transformers: Any, config: Any) -> type:
        names = list(getattr(config, "architectures", None) or [])
        for name in names:
            cls = getattr(transformers, name, None)
            if cls is not None:
                return cls
        raise ValueError(
            f"{self.pretrained}: config.architectures {names or '(none)'} names no class of "
            f"transformers {transformers.__version__}; aqua-audiolm loads the class the "
            "checkpoint's config declares (e.g. Qwen2AudioForConditionalGeneration)"
        )

    def _eos_ids(self, model: Any) -> list[int]:
        ids: list[int] = []
        configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
        for value in [configured, self.tokenizer.eos_token_id]:
            for token in value if isinstance(value, list) else [value]:
                if token is not None and token not in ids:
                    ids.append(int(token))
        if not ids:
            raise ValueError(f"{self.pretrained}: neither the model nor the tokenizer has an EOS")
        return ids

    @property
    def device(self) -> torch.device:
        """Where the model runs."""
        return self._device

    @property
    def tokenizer_name(self) -> str:
        """Name lm-eval records for --apply_chat_template runs."""
        return self.pretrained.replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """The processor's chat template (recorded by lm-eval in the results)."""
        return getattr(self.processor, "chat_template", None) or ""

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """Render lm-eval's chat history with the processor's template, clips as audio parts."""
        messages = [dict(turn) for turn in chat_history]
        if self.system_prompt and not any(m["role"] == "system" for m in messages):
            messages.insert(0, {"role": "system", "content": self.system_prompt})
        if getattr(self.processor, "chat_template", None) is None:
            # A base model without a template: its raw prompt format, no roles.
            return "\n".join(self._raw_prompt(m["content"]) for m in messages)
        conversation = [
            {"role": m["role"], "content": chat_content(m["content"])} for m in messages
        ]
        return self.processor.apply_chat_template(
            conversation, add_generation_prompt=add_generation_prompt, tokenize=False
        )

    def _raw_prompt(self, text: str) -> str:
        bos = getattr(self.processor, "audio_bos_token", None) or ""
        eos = getattr(self.processor, "audio_eos_token", None) or ""
        return text.replace(AUDIO_PLACEHOLDER, f"{bos}{self.audio_token}{eos}")

    def prompt(self, context: str, n_audio: int) -> str:
        """The model's prompt for a request: templated once, one audio token per clip."""
        if self.audio_token not in context:
            if AUDIO_PLACEHOLDER not in context:
                context = AUDIO_PLACEHOLDER * n_audio + "\n" + context
            context = self.apply_chat_template([{"role": "user", "content": context}])
        # Otherwise the context is already a finished prompt (lm-eval --apply_chat_template
        # ran our apply_chat_template, or a task wrote the model's own format): keep it.
        found = context.count(self.audio_token)
        if found != n_audio:
            raise ValueError(
                f"prompt has {found} audio slots for {n_audio} clips; put one "
                f"{AUDIO_PLACEHOLDER!r} in the task prompt per clip"
            )
        return context

    @staticmethod
    def _audio_of(request: Instance) -> list[Mapping[str, Any]]:
        extra = request.args[2] if len(request.args) > 2 else None
        audio = extra.get("audio") if isinstance(extra, Mapping) else None
        if not audio:
            raise ValueError(
                f"task {request.task_name!r} doc {request.doc_id}: request carries no audio; "
                "aqua-audiolm needs a task with doc_to_audio (text-only runs: use an `hf` model)"
            )
        return list(audio)

    def _gen_settings(self, gen_kwargs: Mapping[str, Any]) -> tuple[list[str], int]:
        until = gen_kwargs.get("until", [])
        until = [until] if isinstance(until, str) else list(until or [])
        unused = sorted(set(gen_kwargs) - {"until", "max_gen_toks"} - SAMPLING_KEYS)
        ignored = tuple(sorted(set(gen_kwargs) - {"until", "max_gen_toks"}))
        if (
            parse_bool("do_sample", gen_kwargs.get("do_sample", False)) or unused
        ) and ignored not in self._warned:
            self._warned.add(ignored)
            logger.warning("aqua-audiolm decodes greedily; ignoring gen_kwargs %s", ignored)
        if self.max_gen_toks is not None:
            max_new = self.max_gen_toks
        else:
            max_new = positive_int(
                "max_gen_toks", gen_kwargs.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS)
            )
        return until, max_new

    def encode(self, prompts: list[str], clips: list[list[Mapping[str, Any]]]) -> Any:
        """Processor inputs for a batch, on the model's device; decodes the clips now."""
        waves = [mono_waveform(a, self.sampling_rate) for audio in clips for a in audio]
        inputs = self.processor(
            text=prompts,
            audio=waves,
            sampling_rate=self.sampling_rate,
            padding=True,
            return_tensors="pt",
        )
        # Floating-point features take the model's dtype; token ids stay integers.
        return inputs.to(self._device, self.dtype)

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Greedy replies for all requests, in request order; each batch kept on disk as done."""
        jobs = []
        for index, request in enumerate(requests):
            context, gen_kwargs = request.args[0], request.args[1]
            audio = self._audio_of(request)
            until, max_new = self._gen_settings(gen_kwargs or {})
            prompt = self.prompt(context, len(audio))
            jobs.append(_Job(index, request, prompt, audio, tuple(until), max_new))
        # Every clip is read and judged before the first generate call (clip_checks.py).
        report = check_clips([a for job in jobs for a in job.audio], self.clip_limits)
        facts = iter(report.facts)
        for job in jobs:
            clips = [next(facts) for _ in job.audio]
            job.seconds = sum(f.samples for f in clips) / self.sampling_rate
            job.key = request_key(job.prompt, [f.digest for f in clips], job.until, job.max_new)
        for kind, sources in (("silent", report.silent), ("over_window", report.over_window)):
            if sources:
                logger.warning(
                    "aqua-audiolm: %d clip(s) %s, run as they are (e.g. %s)",
                    len(sources),
                    CLIP_NOTES[kind],
                    sources[0],
                )
        replies: list[str | None] = [None] * len(requests)
        reused = 0
        for job in jobs:
            stored = self.journal.get(job.key) if self.journal is not None else None
            if stored is not None:
                replies[job.index] = stored
                reused += 1
        todo = [job for job in jobs if replies[job.index] is None]
        if reused:
            logger.info(
                "aqua-audiolm: %d of %d replies read back from %s (reply_cache=off regenerates)",
                reused,
                len(jobs),
                self.journal.folder,
            )
        # Longest first: similar lengths share a batch (less padding) and memory errors come early.
        # Requests with different stop settings never share a batch.
        todo.sort(key=lambda j: (j.until, j.max_new, -j.seconds, -len(j.prompt)))
        failures: list[str] = []
        self._succeeded = False
        progress = tqdm(total=len(todo), disable=disable_tqdm, desc="aqua-audiolm")
        start_time = time.perf_counter()
        try:
            for batch in _batches(todo, self.batch_size):
                for job, reply in self._run_batch(batch, failures):
                    replies[job.index] = reply
                progress.update(len(batch))
        except BaseException:
            if self.journal is not None:
                logger.error(
                    "aqua-audiolm: stopped; %d replies of this run are kept in %s: run the "
                    "same command again to continue from them",
                    sum(r is not None for r in replies),
                    self.journal.folder,
                )
            raise
        finally:
            progress.close()
        seconds = time.perf_counter() - start_time
        if failures:
            logger.warning(
                "aqua-audiolm: %d item(s) failed and are scored as unparsed errors: %s",
                len(failures),
                "; ".join(failures[:10]),
            )
        self._record_run(
            {
                "items": len(jobs),
                "generated": len(todo) - len(failures),
                "reused": reused,
                "failed": len(failures),
                "generation_seconds": seconds,
                **report.counts(),
            }
        )
        return [r if r is not None else "" for r in replies]

    def _run_batch(self, batch: list[_Job], failures: list[str]) -> list[tuple[_Job, str]]:
        """Replies for one batch, stored as soon as made; a failing item gets a failed reply."""
        import torch

        try:
            texts = self._generate([job.prompt for job in batch], batch)
        except torch.OutOfMemoryError:
            if len(batch) == 1:
                raise
            # Halve the batch and go on; the replies already made are on disk either way.
            logger.warning("aqua-audiolm: out of memory at batch %d; halving it", len(batch))
            self._release_memory()
            half = len(batch) // 2
            return self._run_batch(batch[:half], failures) + self._run_batch(batch[half:], failures)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as error:
            if len(batch) > 1:
                # Find the item(s) at fault: every other item still gets its real reply.
                done: list[tuple[_Job, str]] = []
                for job in batch:
                    done += self._run_batch([job], failures)
                return done
            (job,) = batch
            message = f"{type(error).__name__}: {error}"
            failures.append(f"{job.request.task_name} doc {job.request.doc_id}: {message}")
            logger.debug("aqua-audiolm: generation failed", exc_info=True)
            if not self._succeeded and len(failures) >= MAX_FAILURES:
                raise RuntimeError(
                    f"aqua-audiolm: the first {len(failures)} items all failed, stopping "
                    f"(last: {message})"
                ) from error
            return [(job, failed_reply(message))]
        done = list(zip(batch, texts, strict=True))
        if self.journal is not None:
            self.journal.put((job.key, text) for job, text in done)
        for job, text in done:
            # lm-eval's --use_cache: its store gets each reply as it is produced.
            self.cache_hook.add_partial("generate_until", job.request.args, text)
        self._succeeded = True
        return done

    def _generate(self, prompts: list[str], batch: list[_Job]) -> list[str]:
        import torch

        until, max_new = list(batch[0].until), batch[0].max_new
        inputs = self.encode(prompts, [job.audio for job in batch])
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                max_new_tokens=max_new,
                do_sample=False,
                eos_token_id=self.eos_token_ids,
                pad_token_id=self.pad_token_id,
                stop_strings=until or None,
                tokenizer=self.tokenizer if until else None,
            )
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        return [cut_at_stop(text, until) for text in texts]

    def _release_memory(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _record_run(self, counts: dict[str, Any]) -> None:
        """Add this call's counts, time and peak memory to the run's record (all ranks)."""
        mine = {**counts, "peak_memory_mb": peak_memory_mb(self._device)}
        ranks = self._collective.all_objects(mine) if self._collective is not None else [mine]
        info = self.run_info
        for key in ("items", "generated", "reused", "failed", *CLIP_COUNT_KEYS):
            info[key] = info.get(key, 0) + sum(r[key] for r in ranks)
        # Ranks run side by side: the run took as long as its slowest rank.
        info["generation_seconds"] = info.get("generation_seconds", 0.0) + max(
            r["generation_seconds"] for r in ranks
        )
        info["items_per_second"] = (
            info["generated"] / info["generation_seconds"] if info["generation_seconds"] else None
        )
        info["peak_memory_mb"] = [r["peak_memory_mb"] for r in ranks]

    def get_model_info(self) -> dict[str, Any]:
        """What lm-eval adds to the results' `config`: filled in as generation runs."""
        # lm-eval asks before any request is run and writes the results file at the end:
        # handing over this very dict lets the throughput measured meanwhile reach the file.
        return {"aqua_audiolm": self.run_info}

    def set_cache_hook(self, cache_hook: Any) -> None:
        """lm-eval's --use_cache: make its keys accept audio, then keep its hook."""
        install_audio_cache_keys()
        super().set_cache_hook(cache_hook)

    def all_gather(self, tensor: Any) -> Any:
        """All ranks' tensors (lm-eval pads ranks to equal request counts with it)."""
        return tensor if self._collective is None else self._collective.all_gather(tensor)

    def gather_object(self, obj: Any, dst: int = 0) -> list[Any] | None:
        """Every rank's object on `dst` (how lm-eval collects per-item results on rank 0)."""
        if self._collective is None:
            return [obj]
        return self._collective.gather_object(obj, dst)

    def barrier(self) -> None:
        """Wait for all ranks."""
        if self._collective is not None:
            self._collective.barrier()

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: audio LMs are evaluated generatively here."""
        raise NotImplementedError(
            "aqua-audiolm supports only generate_until tasks (no loglikelihood / multiple-choice "
            "output_type)"
        )

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: audio LMs are evaluated generatively here."""
        raise NotImplementedError(
            "aqua-audiolm supports only generate_until tasks (no loglikelihood_rolling / "
            "perplexity output_type)"
        )
