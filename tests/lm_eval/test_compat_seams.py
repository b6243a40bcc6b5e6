"""The seams to lm-eval: one version gate; aggregations told their task and filter explicitly."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aqua_tasks.core.scoring import ItemOutcome, pack_outcome, summarize
from aqua_tasks.errors import UncollectedOutcomesError
from aqua_tasks.task.aggregations import aggregate_acc, aggregate_n_items
from eval_common.harness_versions import supported_range, unsupported_version
from eval_plugins.lm_eval.aqua import task as aqua_task

REPO = Path(__file__).resolve().parents[2]


class BuiltTask:
    """What evaluate() receives of an AQUA task: a name, a config, its aggregations."""

    config = None

    def __init__(self, name: str) -> None:
        self.task_name = name

    def process_results(self, doc: dict, results: list) -> dict:
        return {}

    def aggregation(self) -> dict:
        return {"acc": aggregate_acc, "n_items": aggregate_n_items}


def test_the_gate_is_the_range_pyproject_requires():
    project = (REPO / "pyproject.toml").read_text()
    assert re.findall(r'"lm-eval(>=[^"\[]+)"', project) == [supported_range("lm-eval")]
    script = (REPO / "scripts" / "install-lmms-eval-env.sh").read_text()
    assert f"'lmms-eval{supported_range('lmms-eval')}'" in script


@pytest.mark.parametrize("version", ["0.4.13", "0.4.14", "0.4.20.dev1"])
def test_every_lm_eval_the_range_allows_is_extended(version):
    assert unsupported_version("lm-eval", version) is None


@pytest.mark.parametrize("version", ["0.4.12", "0.6.0", "", None])
def test_an_lm_eval_outside_the_range_is_refused_with_the_range_named(version):
    assert unsupported_version("lm-eval", version) == (
        f"lm-eval {version} is not a version this package supports "
        "(>=0.4.13,<0.6, tested with 0.4.13)"
    )


def test_lmms_eval_is_extended_only_on_the_version_installed():
    assert unsupported_version("lmms-eval", "0.7.3") is None
    assert "(==0.7.3, tested with 0.7.3)" in unsupported_version("lmms-eval", "0.7.4")


def test_an_aqua_task_whose_values_were_not_collected_stops_the_results_step():
    with pytest.raises(UncollectedOutcomesError, match=r"^aqua_animal: lm-eval's per-item values"):
        aqua_task.fix_results({"aqua_animal": BuiltTask("aqua_animal")}, {"results": {}}, 0)


def test_an_orca_aggregation_of_unlabelled_values_names_what_is_missing():
    from eval_plugins.lm_eval.metric import orca_aggregate
    from orca_judge.errors import OrcaMetricError
    from orca_judge.metric.payloads import PAYLOAD_MARK

    with pytest.raises(OrcaMetricError, match="without their task and filter"):
        orca_aggregate([{PAYLOAD_MARK: "orca", "inputs": {}, "settings": {}}])


def test_each_tasks_values_reach_its_aggregations_and_the_results_step(monkeypatch):
    from lm_eval import evaluator, evaluator_utils

    from eval_common.evaluation import aggregated_values
    from eval_plugins.lm_eval import compat

    values = [pack_outcome(0, ItemOutcome(0, "Solvable", True, True, False))]
    values.append(pack_outcome(1, ItemOutcome(1, "Solvable", False, True, False)))
    task = BuiltTask("aqua_animal")
    seen = []

    def evaluate(lm, task_dict, bootstrap_iters=0):
        raw = {("acc", "none"): list(values), ("n_items", "none"): list(values)}
        figures, _ = evaluator_utils._compute_task_aggregations(task, raw, bootstrap_iters)
        seen.append(aggregated_values()["aqua_animal"][("acc", "none")])
        return {"results": {"aqua_animal": {"alias": "aqua_animal", **figures}}}

    monkeypatch.setattr(evaluator, "evaluate", evaluate)
    monkeypatch.setattr(
        evaluator_utils, "_compute_task_aggregations", evaluator_utils._compute_task_aggregations
    )
    monkeypatch.setattr(compat, "HOOKS", compat.EvaluationHooks())
    compat.patch_evaluation(finish=aqua_task.fix_results)
    results = evaluator.evaluate(None, {"aqua_animal": task}, bootstrap_iters=0)
    (labelled,) = seen
    assert (labelled.task, labelled.filter_key, list(labelled)) == ("aqua_animal", "none", values)
    row = results["results"]["aqua_animal"]
    assert row["acc,none"] == summarize(values)["acc"] == 0.5 and row["n_items,none"] == 2
    assert aggregated_values() == {}


def test_every_patch_runs_on_the_tested_version_only():
    from eval_common.harness_versions import TESTED, installed_version
    from eval_plugins.lm_eval import compat
    from eval_plugins.seams import SEAMS

    assert installed_version("lm-eval") == TESTED["lm-eval"] == "0.4.13"
    lm_eval_seams = {name for name, seam in SEAMS.items() if seam.harness == "lm-eval"}
    assert lm_eval_seams == {
        "eval_plugins.lm_eval.compat.patch_evaluation",
        "eval_plugins.lm_eval.compat.extend_task_manager",
        "eval_plugins.lm_eval.compat.patch_cache_keys",
    }
    # Each seam is named in the compat module's list of what it patches.
    doc = compat.__doc__ or ""
    for name in lm_eval_seams:
        if name.startswith("eval_plugins.lm_eval.compat."):
            assert f"`{name.rpartition('.')[2]}`" in doc, name


def test_an_untested_lm_eval_runs_without_a_skippable_patch_after_one_line(monkeypatch, caplog):
    import logging

    from eval_plugins.lm_eval import compat

    monkeypatch.setattr("eval_plugins.seams.installed_version", lambda harness: "0.4.14")

    class Manager:
        def __init__(self, verbosity=None, include_path=None, include_defaults=True, metadata=None):
            self.include_path = include_path

        def match_tasks(self, task_list):
            return list(task_list)

    def nothing(patterns, matches, metadata):
        return []

    with caplog.at_level(logging.WARNING, logger="eval_plugins.seams"):
        compat.extend_task_manager(Manager, lambda path, defaults: ["ours"], nothing)
        compat.extend_task_manager(Manager, lambda path, defaults: ["ours"], nothing)
    # Left unpatched: neither our folder nor the choice of matches.
    assert Manager().match_tasks(["aqua_mmau"]) == ["aqua_mmau"]
    assert Manager().include_path is None
    (line,) = [r.getMessage() for r in caplog.records]
    assert line == (
        "aqua-bench-eval: lm-eval 0.4.14 is not the version this package was tested with "
        "(0.4.13): running without the AQUA tasks in every TaskManager (pass --include_path), "
        "unbuilt tracks left out of --tasks globs and --metadata checked before the model "
        "loads (pip install 'lm-eval==0.4.13')"
    )


def test_an_untested_lm_eval_is_refused_where_a_patch_cannot_be_left_out(monkeypatch):
    from eval_plugins.lm_eval.registration import register_all

    monkeypatch.setattr("eval_plugins.seams.installed_version", lambda harness: "0.4.14")
    with pytest.raises(RuntimeError) as refused:
        register_all()
    assert str(refused.value) == (
        "lm-eval 0.4.14 is not the version this package was tested with (0.4.13), and judge "
        "sessions, the task and filter of every aggregation's values, and AQUA's pooled "
        "all-tracks rows cannot be left out; pip install 'lm-eval==0.4.13'"
    )


def test_the_start_up_hook_says_the_refusal_in_its_one_warning(monkeypatch, caplog):
    import logging

    from lm_eval import evaluator

    from eval_plugins.startup_hook import LmEvalImportHook

    monkeypatch.setattr("eval_plugins.seams.installed_version", lambda harness: "0.4.14")
    hook = LmEvalImportHook()
    hook.pending = {"lm_eval.evaluator": "on_evaluator"}
    with caplog.at_level(logging.WARNING, logger="eval_plugins.startup_hook"):
        hook.fire("lm_eval.evaluator", evaluator)
    (warning,) = [r.getMessage() for r in caplog.records if r.name == "eval_plugins.startup_hook"]
    assert "is off for this run: lm-eval 0.4.14 is not the version this package was tested" in (
        warning
    )
    assert "pip install 'lm-eval==0.4.13'" in warning
