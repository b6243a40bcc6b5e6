"""Loading an `aqua-audiolm` checkpoint: its processor, its model, and the facts recorded of them.

Qwen2-Audio, Audio Flamingo 3, Music Flamingo and kin load with transformers' Auto classes and
the class the config declares; the Qwen Omni models (2.5 and 3) load their thinker alone, and
they and Phi-4-multimodal take inputs built from the checkpoint's parts (families/parts.py);
Voxtral's processor renders each conversation with its clips (families/voxtral.py).
transformers is imported on first use: the settings can be checked without it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from typing import Any

from aqua_tasks.audio.checks import ClipLimits
from aqua_tasks.models.audio_prompts import AUDIO_PLACEHOLDER, render_chat
from aqua_tasks.models.families.omni import OmniThinkerInputs, is_omni, omni_family, thinker_config
from aqua_tasks.models.families.phi4 import (
    SPEECH_ADAPTER,
    Phi4AudioInputs,
    is_phi4_multimodal,
    load_speech_adapter,
)
from aqua_tasks.models.families.voxtral import VoxtralInputs, is_voxtral
from aqua_tasks.models.hf_audio_lm_settings import AudioLMSettings

logger = logging.getLogger(__name__)
# Sub-models built by libraries transformers does not install: sub-config model type ->
# the library (Gemma-3n's vision tower is a timm model, and timm needs torchvision).
SUBMODEL_LIBRARIES = {"gemma3n_vision": "timm", "timm_wrapper": "timm"}
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
    """The checkpoint's processor, before any weights load; ValueError naming the family and
    what it lacks unless the processor takes audio through an audio token and a feature
    extractor, or is missing a library."""
    import transformers

    pretrained, load = settings.pretrained, settings.load_args
    family = getattr(config, "model_type", None) or "unknown"
    check_submodel_libraries(pretrained, config)
    try:
        if config is not None and is_omni(config):
            processor = OmniThinkerInputs.from_pretrained(pretrained, config, **load)
        elif config is not None and is_phi4_multimodal(config):
            processor = Phi4AudioInputs.from_pretrained(pretrained, config, **load)
        else:
            processor = transformers.AutoProcessor.from_pretrained(pretrained, **load)
            if is_voxtral(config):
                processor = VoxtralInputs(processor)
    except ImportError as error:  # e.g. Granite Speech's feature extractor needs torchaudio
        first = " ".join(str(error).split())[:200]
        raise ValueError(
            f"{pretrained}: {family} models cannot run here: its processor needs a library "
            f"that is not installed ({first})"
        ) from None
    if audio_features(processor) is None:
        raise ValueError(
            f"{pretrained}: {family}: its processor ({type(processor).__name__}) has no audio "
            "feature extractor; aqua-audiolm needs an audio LM (families: docs/audio_lm.md)"
        )
    if not getattr(processor, "audio_token", None):
        raise ValueError(
            f"{pretrained}: {family}: its processor ({type(processor).__name__}) defines no "
            "audio token to expand; aqua-audiolm runs processors that take text with audio "
            "tokens plus the clips (families: docs/audio_lm.md)"
        )
    # A template that drops audio parts (or writes another marker) would make every prompt
    # fail later with a misleading count; say it here, naming the template and the token.
    rendered = render_chat(
        processor, [{"role": "user", "content": f"{AUDIO_PLACEHOLDER}x"}], None, True
    )
    if rendered.count(processor.audio_token) != 1:
        raise ValueError(
            f"{pretrained}: {family}: its chat template renders one audio part with "
            f"{rendered.count(processor.audio_token)} {processor.audio_token!r} tokens, not 1 "
            f"(rendered: {rendered[:200]!r}); aqua-audiolm puts one audio token per clip"
        )
    return processor


def check_submodel_libraries(pretrained: str, config: Any) -> None:
    """ValueError naming the family, the part and the library where a part of the model needs
    a library that does not import (checked before any processor or weights load)."""
    import importlib

    for name in getattr(config, "sub_configs", None) or {}:
        part = getattr(config, name, None)
        library = SUBMODEL_LIBRARIES.get(getattr(part, "model_type", None))
        if library is None:
            continue
        try:
            importlib.import_module(library)
        except Exception as error:  # a broken install fails in many ways
            first = " ".join(str(error).split())[:200]
            part_name = name.removesuffix("_config") + " part"
            raise ValueError(
                f"{pretrained}: {config.model_type} models cannot run here: its {part_name} is a "
                f"{library} model and {library} does not import ({type(error).__name__}: {first})"
            ) from None


def load_model(settings: AudioLMSettings, config: Any, dtype: Any) -> tuple[Any, str | None]:
    """The checkpoint's model as loaded (Omni: the thinker alone), on CPU or its device map,
    and the adapter it runs with (Phi-4-multimodal's speech LoRA folder; else None)."""
    import transformers

    if config is None:  # unreadable before: read again to raise the loader's own error
        config = transformers.AutoConfig.from_pretrained(settings.pretrained, **settings.load_args)
    extra: dict[str, Any] = {}
    family = omni_family(config)
    if family is not None:
        # Text replies need only the thinker: load it alone, whether the checkpoint holds
        # the thinker or the full Omni model (thinker weights under `thinker.`).
        model_cls = getattr(transformers, family.thinker_class)
        if thinker_config(config) is not config:
            extra.update(config=thinker_config(config), key_mapping={r"^thinker\.": ""})
    else:
        model_cls = model_class(settings.pretrained, config)
    if getattr(config, "enable_audio_output", False) and not is_omni(config):
        extra["enable_audio_output"] = False  # other Omni models: text needs no talker
    if settings.device_map is not None:
        extra.update(device_map=settings.device_map, max_memory=settings.max_memory)
    model = model_cls.from_pretrained(
        settings.pretrained, dtype=dtype, **settings.load_args, **extra
    )
    adapter = None
    if is_phi4_multimodal(config):
        model, adapter = load_speech_adapter(model, settings.pretrained, settings.revision)
        if adapter is None:
            logger.warning(
                "aqua-audiolm: %s has no %s/ adapter: running its weights as they are "
                "(right for a checkpoint whose speech LoRA is merged, not for the published one)",
                settings.pretrained,
                SPEECH_ADAPTER,
            )
    return model, adapter


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


def audio_features(processor: Any) -> Any:
    """A processor's audio feature extractor (`feature_extractor`, or Granite's and Phi-4's
    `audio_processor`), or None."""
    found = getattr(processor, "feature_extractor", None)
    return found if found is not None else getattr(processor, "audio_processor", None)


def clip_limits(processor: Any) -> ClipLimits:
    """What an audio LM's processor accepts: its rate, shortest and longest clip heard."""
    features = audio_features(processor)
    hop = int(getattr(features, "hop_length", 160) or 160)
    rate = int(features.sampling_rate)
    window = getattr(features, "n_samples", None)
    # Audio Flamingo cuts a clip into 30 s windows up to its own limit (in seconds).
    longest = getattr(processor, "max_audio_len", None)
    heard = int(longest * rate) if longest else int(window) if window else None
    return ClipLimits(
        sampling_rate=rate, min_samples=(MIN_MEL_FRAMES - 1) * hop + 1, max_samples=heard
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
