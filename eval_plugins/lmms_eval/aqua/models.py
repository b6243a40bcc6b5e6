"""This package's models under lmms-eval: its `lmms` interface over the lm-eval classes.

Each class wraps one of the lm-eval model classes (loading, generation, reply journal and
failure handling stay there, see `models.hf_audio_lm` and `models.baselines`) and turns
lmms-eval's requests into the lm-eval requests those classes take. They are registered under
lmms-eval's `lmms_eval.models` entry-point group (`eval_plugins.lmms_eval.manifests`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from lm_eval.api.instance import Instance as LmEvalInstance
from lm_eval.api.model import LM
from lmms_eval.api.instance import Instance
from lmms_eval.api.model import lmms

from aqua_tasks.models.baselines import AlwaysRejectLM, FirstOptionLM, RandomOptionLM, ReplayLM
from aqua_tasks.models.hf_audio_lm import AudioLM


def lm_eval_gen_kwargs(gen_kwargs: Mapping[str, Any] | None) -> dict[str, Any]:
    """lmms-eval generation settings in lm-eval's names (`max_new_tokens` → `max_gen_toks`)."""
    settings = dict(gen_kwargs or {})
    if "max_new_tokens" in settings:
        tokens = settings.pop("max_new_tokens")
        if settings.get("max_gen_toks", tokens) != tokens:
            raise ValueError(
                f"generation settings give both max_new_tokens={tokens} and "
                f"max_gen_toks={settings['max_gen_toks']}; keep one"
            )
        settings["max_gen_toks"] = tokens
    return settings


class LmEvalModel(lmms):
    """An lmms-eval model that answers through one of this package's lm-eval models."""

    lm_class: ClassVar[type[LM]]

    def __init__(self, lm: LM) -> None:
        super().__init__()
        self.lm = lm

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """Build from `--model_args`, parsed and merged as the lm-eval class does it."""
        return cls(cls.lm_class.create_from_arg_string(arg_string, additional_config))

    @property
    def rank(self) -> int:
        """This process's rank (the wrapped model's)."""
        return self.lm.rank

    @property
    def world_size(self) -> int:
        """Number of processes (the wrapped model's)."""
        return self.lm.world_size

    def lm_eval_request(self, request: Instance) -> LmEvalInstance:
        """The lm-eval request of an lmms-eval one: its doc, context, settings and audio."""
        context, gen_kwargs, doc_to_visual, doc_id, task, split = request.args
        doc = self.task_dict[task][split][doc_id]
        return LmEvalInstance(
            request_type="generate_until",
            doc=doc,
            arguments=(context, lm_eval_gen_kwargs(gen_kwargs), {"audio": doc_to_visual(doc)}),
            idx=0,
            metadata=(task, doc_id, 1),
        )

    def generate_until(self, requests: list[Instance]) -> list[str]:
        """Replies for all requests, in order."""
        converted = [self.lm_eval_request(r) for r in requests]
        return self.lm.generate_until(converted, disable_tqdm=self.rank != 0)

    def generate_until_multi_round(self, requests: list[Instance]) -> list[str]:
        """Not supported: AQUA tasks ask one question per clip."""
        raise NotImplementedError(f"{type(self).__name__} supports only generate_until tasks")

    def loglikelihood(self, requests: list[Instance]) -> list:
        """Not supported: AQUA tasks are generative."""
        raise NotImplementedError(f"{type(self).__name__} supports only generate_until tasks")


class AudioLMLmms(LmEvalModel):
    """`aqua-audiolm` under lmms-eval: Qwen2-Audio-style models on any device (CPU too)."""

    lm_class = AudioLM


class ReplayLmms(LmEvalModel):
    """`aqua-replay` under lmms-eval: saved replies looked up by task and item id."""

    lm_class = ReplayLM


class AlwaysRejectLmms(LmEvalModel):
    """`aqua-always-reject` under lmms-eval: always the last (rejection) option."""

    lm_class = AlwaysRejectLM


class FirstOptionLmms(LmEvalModel):
    """`aqua-first-option` under lmms-eval: always option (a)."""

    lm_class = FirstOptionLM


class RandomOptionLmms(LmEvalModel):
    """`aqua-random` under lmms-eval: a seeded random option per (task, item)."""

    lm_class = RandomOptionLM
