"""The one table of what this plugin adds to each harness: name -> "module:attribute".

Models, metrics, aggregations and task folders of both packages, for both harnesses. Nothing
is imported here: a target is a string, loaded on first use (lm-eval's registry takes it as it
is; lmms-eval's model manifests take its dotted form). pyproject.toml's entry points, the
lmms-eval manifests, `aqua eval`'s help and the run checks all read this table, and
`tests/architecture/test_registry.py` checks pyproject.toml against it. No filter is added.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

LM_EVAL = "lm-eval"
LMMS_EVAL = "lmms-eval"

# (harness, kind) -> name -> target. Order is the order users see (`aqua eval --help`).
TABLE: dict[tuple[str, str], dict[str, str]] = {
    (LM_EVAL, "models"): {
        "aqua-replay": "aqua_tasks.models.baselines:ReplayLM",
        "aqua-always-reject": "aqua_tasks.models.baselines:AlwaysRejectLM",
        "aqua-random": "aqua_tasks.models.baselines:RandomOptionLM",
        "aqua-first-option": "aqua_tasks.models.baselines:FirstOptionLM",
        "aqua-audiolm": "aqua_tasks.models.hf_audio_lm:AudioLM",
        "openai-audio-chat": "aqua_tasks.models.api.client:OpenAIAudioChatLM",
        "orca-replay": "eval_plugins.lm_eval.orca_human:OrcaReplayLM",
    },
    (LM_EVAL, "metrics"): {
        "orca": "eval_plugins.lm_eval.metric:orca",
        "llm_judge": "eval_plugins.lm_eval.metric:llm_judge",
    },
    (LM_EVAL, "aggregations"): {
        "orca": "eval_plugins.lm_eval.metric:orca_aggregate",
        "llm_judge": "eval_plugins.lm_eval.metric:llm_judge_aggregate",
    },
    # A task folder is a package of YAMLs: its target names the package alone.
    (LM_EVAL, "tasks"): {"aqua": "aqua_tasks.task_configs"},
    (LMMS_EVAL, "models"): {
        "aqua-audiolm": "eval_plugins.lmms_eval.aqua.models:AudioLMLmms",
        "aqua-replay": "eval_plugins.lmms_eval.aqua.models:ReplayLmms",
        "aqua-always-reject": "eval_plugins.lmms_eval.aqua.models:AlwaysRejectLmms",
        "aqua-first-option": "eval_plugins.lmms_eval.aqua.models:FirstOptionLmms",
        "aqua-random": "eval_plugins.lmms_eval.aqua.models:RandomOptionLmms",
        "orca-replay": "eval_plugins.lmms_eval.orca_replay:OrcaReplayLMMS",
    },
    (LMMS_EVAL, "metrics"): {
        "orca": "eval_plugins.lmms_eval.metric:orca",
        "llm_judge": "eval_plugins.lmms_eval.metric:llm_judge",
    },
    (LMMS_EVAL, "aggregations"): {
        "orca": "eval_plugins.lmms_eval.metric:orca_aggregate",
        "llm_judge": "eval_plugins.lmms_eval.metric:llm_judge_aggregate",
    },
    (LMMS_EVAL, "tasks"): {"aqua": "aqua_tasks.lmms_task_configs"},
}

# Entry-point groups a harness release reads -> the (harness, kind) they carry. lm-eval 0.4.13
# and 0.5.0.dev1 read none; upstream lm-eval has merged `lm_eval.models` and `lm_eval.metrics`
# for its next release, which `register_all` then finds already loaded (see registration).
# lmms-eval 0.7.3 reads `lmms_eval.models` (one entry: every manifest of ours).
ENTRY_POINT_GROUPS: dict[str, tuple[str, str]] = {
    "lm_eval.models": (LM_EVAL, "models"),
    "lm_eval.metrics": (LM_EVAL, "metrics"),
    "lmms_eval.models": (LMMS_EVAL, "models"),
}
# The one `lmms_eval.models` entry point: every lmms-eval model of the table, as manifests.
LMMS_MANIFESTS = ("aqua-bench-eval", "eval_plugins.lmms_eval.manifests:MANIFESTS")


def targets(harness: str, kind: str) -> dict[str, str]:
    """name -> "module:attribute" of what this plugin adds to `harness` of one kind."""
    return dict(TABLE[(harness, kind)])


def aqua_models(harness: str) -> list[str]:
    """The AQUA models of `harness` (every model of the table but ORCA's `orca-*` ones)."""
    return [name for name in TABLE[(harness, "models")] if not name.startswith("orca-")]


def dotted(target: str) -> str:
    """`module.attribute`, the form lmms-eval's model manifests take."""
    return target.replace(":", ".")


def load(target: str) -> Any:
    """The object a "module:attribute" target names (imports its module)."""
    module, _, attribute = target.partition(":")
    return getattr(import_module(module), attribute)
