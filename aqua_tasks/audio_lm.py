"""`aqua-audiolm`: an lm-eval model class for Hugging Face audio LMs (Qwen2-Audio and kin).

Works with models whose processor takes `text=` plus `audio=` and expands one audio token
per clip (Qwen2-Audio, Qwen2.5-Omni's thinker). Generation only, greedy, batched.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from tqdm import tqdm

from aqua_tasks.audio import LazyAudio, probe_audio, resample
from aqua_tasks.cli_common import parse_bool
from aqua_tasks.deprecation import moved

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

AUDIO_PLACEHOLDER = "<audio>"  # what task prompts put where a clip goes
DEFAULT_MAX_GEN_TOKS = 256
# Sampling settings a task may carry; decoding here is always greedy.
SAMPLING_KEYS = frozenset({"do_sample", "temperature", "top_p", "top_k"})


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


def audio_seconds(audio: Mapping[str, Any]) -> float:
    """A clip's length without decoding it where possible (for sorting batches)."""
    if isinstance(audio, LazyAudio):
        return probe_audio(audio.path).duration
    return len(audio["array"]) / float(audio["sampling_rate"])


# Device and dtype resolution moved to aqua_tasks.devices (imported lazily: torch is heavy).
__getattr__ = moved(
    __name__, dict.fromkeys(("resolve_device", "resolve_dtype", "DTYPES"), "aqua_tasks.devices")
)


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
    ) -> None:
        super().__init__()
        if not pretrained:
            raise ValueError(
                "aqua-audiolm needs a model: --model_args pretrained=<hub id or folder>"
            )
        import transformers

        from aqua_tasks.devices import resolve_device, resolve_dtype

        self.pretrained = str(pretrained)
        self.batch_size = positive_int("batch_size", batch_size)
        self.max_gen_toks = (
            None if max_gen_toks is None else positive_int("max_gen_toks", max_gen_toks)
        )
        self.system_prompt = system_prompt or None
        self._warned: set[tuple[str, ...]] = set()
        self._device = resolve_device(device)
        self.dtype = resolve_dtype(dtype, self._device)
        remote = parse_bool("trust_remote_code", trust_remote_code)
        load = {"revision": revision, "trust_remote_code": remote}

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

        config = transformers.AutoConfig.from_pretrained(self.pretrained, **load)
        model_cls = self._model_class(transformers, config)
        extra = {}
        if getattr(config, "enable_audio_output", False):
            extra["enable_audio_output"] = False  # Qwen2.5-Omni: text replies need no talker
        loaded = model_cls.from_pretrained(self.pretrained, dtype=self.dtype, **load, **extra)
        # Omni models generate text with their "thinker" sub-model.
        self.model = getattr(loaded, "thinker", loaded).to(self._device).eval()
        self.eos_token_ids = self._eos_ids(loaded)
        self.pad_token_id = (
            self.tokenizer.pad_token_id
            if self.tokenizer.pad_token_id is not None
            else self.eos_token_ids[0]
        )
        logger.info(
            "aqua-audiolm: %s (%s) on %s in %s, batch size %d",
            self.pretrained,
            type(self.model).__name__,
            self._device,
            str(self.dtype).removeprefix("torch."),
            self.batch_size,
        )

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
            from aqua_tasks.devices import resolve_device

            # lm-eval's CLI sends device=cuda:0 unless told otherwise; on a machine without
            # that device, fall back to the best one here (an explicit model_args device errors).
            try:
                resolve_device(harness["device"])
            except ValueError as error:
                logger.warning("aqua-audiolm: %s; using device=auto", error)
                harness["device"] = "auto"
        return cls(**arg_dict, **harness)

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
        """Greedy replies for all requests, in request order."""
        import torch

        jobs = []
        for index, request in enumerate(requests):
            context, gen_kwargs = request.args[0], request.args[1]
            audio = self._audio_of(request)
            until, max_new = self._gen_settings(gen_kwargs or {})
            prompt = self.prompt(context, len(audio))
            length = sum(audio_seconds(a) for a in audio)
            jobs.append((index, prompt, audio, tuple(until), max_new, length))
        # Longest first: similar lengths share a batch (less padding) and memory errors come early.
        # Requests with different stop settings never share a batch.
        jobs.sort(key=lambda j: (j[3], j[4], -j[5], -len(j[1])))
        replies: list[str] = [""] * len(requests)
        progress = tqdm(total=len(requests), disable=disable_tqdm, desc="aqua-audiolm")
        start = 0
        while start < len(jobs):
            batch = [jobs[start]]
            while (
                len(batch) < self.batch_size
                and start + len(batch) < len(jobs)
                and jobs[start + len(batch)][3:5] == batch[0][3:5]
            ):
                batch.append(jobs[start + len(batch)])
            start += len(batch)
            until, max_new = list(batch[0][3]), batch[0][4]
            inputs = self.encode([j[1] for j in batch], [j[2] for j in batch])
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
            for job, text in zip(batch, texts, strict=True):
                replies[job[0]] = cut_at_stop(text, until)
            progress.update(len(batch))
        progress.close()
        return replies

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
