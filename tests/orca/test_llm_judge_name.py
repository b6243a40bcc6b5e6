"""`llm_judge` is a name lm-eval may take for a built-in metric (proposed upstream); built-in
names win over a plugin's, so where lm-eval holds its own, a task naming it is refused with
the choice spelled out, never judged by either one silently."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from lm_eval.api.registry import metric_registry

from eval_plugins.lm_eval import metric
from orca_judge.errors import LlmJudgeError


def lm_eval_builtin(*args, **kwargs):
    """Stands in for a built-in `llm_judge` metric of a later lm-eval release."""
    return {}


@pytest.fixture
def builtin_llm_judge(monkeypatch):
    lookup = metric_registry.get

    def get(name, *default):
        return lm_eval_builtin if name == "llm_judge" else lookup(name, *default)

    monkeypatch.setattr(metric_registry, "get", get)


def task_with(entry: dict) -> SimpleNamespace:
    return SimpleNamespace(config=SimpleNamespace(task="my_task", metric_list=[entry]))


def test_without_a_builtin_the_name_is_this_packages():
    metric.register()
    assert not metric.lm_eval_has_own_llm_judge()
    assert metric_registry.get("llm_judge") is metric.llm_judge


def test_a_builtin_llm_judge_keeps_its_name_and_a_task_naming_it_is_refused(builtin_llm_judge):
    assert metric.lm_eval_has_own_llm_judge()
    metric.register()  # leaves lm-eval's own in place
    assert metric_registry.get("llm_judge") is lm_eval_builtin
    with pytest.raises(LlmJudgeError) as refused:
        metric.wire_llm_judge_task(task_with({"metric": "llm_judge", "model": "m"}))
    assert str(refused.value) == (
        "task 'my_task': metric llm_judge is both lm-eval's own metric and this package's "
        "prompted judge; choose one: `metric: !function eval_plugins.lm_eval.metric.llm_judge` "
        "for this package's, or AQUA_LM_EVAL_HOOK=0 for lm-eval's"
    )


def test_a_task_without_llm_judge_is_untouched_by_the_builtin(builtin_llm_judge):
    assert metric.wire_llm_judge_task(task_with({"metric": "exact_match"})) is None
