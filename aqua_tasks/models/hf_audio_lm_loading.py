"""Loading an `aqua-audiolm` checkpoint: its processor, its model, and the facts recorded of them.

Qwen2-Audio and kin load with transformers' Auto classes and the class the config declares;
Qwen2.5-Omni loads its thinker alone, with inputs built from the checkpoint's parts
(omni_inputs.py). transformers is imported on first use: the settings can be checked without it.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aqua_tasks.audio.checks import ClipLimits
from aqua_tasks.models.hf_audio_lm_settings import AudioLMSettings
from aqua_tasks.models.omni_inputs import OmniThinkerInputs, is_omni, thinker_config

# Whisper-style encoders (Qwen2-Audio) crash inside transformers on clips of 6 mel frames or
# fewer (960 samples at 16 kHz); 7 frames (961 samples) run.
MIN_MEL_FRAMES = 7


def read_config(settings: AudioLMSettings) -> Any:
    """The checkpoint's config, or None where it cannot be read (reported by `load_model`)."""
    import transformers

    try:
        return transformers.AutoConfig.from_pretrained(settings.pretrained, **settings.load_args)
    except (OSError, ValueError):
        return None


def load_processor(settings: AudioLMSettings, config: Any) -> Any:
    """The checkpoint's processor; ValueError unless it has an audio feature extractor and token."""
    import transformers

    pretrained, load = settings.pretrained, settings.load_args
    if config is not None and is_omni(config):
        processor = OmniThinkerInputs.from_pretrained(pretrained, config, **load)
    else:
        processor = transformers.AutoProcessor.from_pretrained(pretrained, **load)
    if getattr(processor, "feature_extractor", None) is None:
        raise ValueError(
            f"{pretrained}: its processor ({type(processor).__name__}) has no audio "
            "feature extractor; aqua-audiolm needs an audio LM such as Qwen2-Audio"
        )
    if not getattr(processor, "audio_token", None):
        raise ValueError(
            f"{pretrained}: its processor ({type(processor).__name__}) defines no "
            "audio token; aqua-audiolm supports processors that expand an audio placeholder "
            "(Qwen2-Audio, Qwen2.5-Omni)"
        )
    return processor


def load_model(settings: AudioLMSettings, config: Any, dtype: Any) -> Any:
    """The checkpoint's model as loaded (Omni: the thinker alone), on CPU or its device map."""
    import transformers

    if config is None:  # unreadable before: read again to raise the loader's own error
        config = transformers.AutoConfig.from_pretrained(settings.pretrained, **settings.load_args)
    extra: dict[str, Any] = {}
    if is_omni(config):
        # Text replies need only the thinker: load it alone, whether the checkpoint holds
        # the thinker or the full Omni model (thinker weights under `thinker.`).
        model_cls = transformers.Qwen2_5OmniThinkerForConditionalGeneration
        if thinker_config(config) is not config:
            extra.update(config=thinker_config(config), key_mapping={r"^thinker\.": ""})
    else:
        model_cls = model_class(settings.pretrained, config)
    if getattr(config, "enable_audio_output", False) and not is_omni(config):
        extra["enable_audio_output"] = False  # other Omni models: text needs no talker
    if settings.device_map is not None:
        extra.update(device_map=settings.device_map, max_memory=settings.max_memory)
    return model_cls.from_pretrained(
        settings.pretrained, dtype=dtype, **settings.load_args, **extra
    )


def model_class(pretrained: str, config: Any) -> type:
    """The transformers class the checkpoint's config declares; ValueError naming the choices."""
    import transformers

    names = list(getattr(config, "architectures", None) or [])
    for name in names:
        cls = getattr(transformers, name, None)
        if cls is not None:
            return cls
    raise ValueError(
        f"{pretrained}: config.architectures {names or '(none)'} names no class of "
        f"transformers {transformers.__version__}; aqua-audiolm loads the class the "
        "checkpoint's config declares (e.g. Qwen2AudioForConditionalGeneration)"
    )


def eos_ids(pretrained: str, model: Any, tokenizer: Any) -> list[int]:
    """Every token that ends a reply: the model's generation config's and the tokenizer's."""
    ids: list[int] = []
    configured = getattr(getattr(model, "generation_config", None), "eos_token_id", None)
    for value in [configured, tokenizer.eos_token_id]:
        for token in value if isinstance(value, list) else [value]:
            if token is not None and token not in ids:
                ids.append(int(token))
    if not ids:
        raise ValueError(f"{pretrained}: neither the model nor the tokenizer has an EOS")
    return ids


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
