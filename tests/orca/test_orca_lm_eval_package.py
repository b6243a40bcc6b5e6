"""ORCA under lm-eval: one judge session per evaluation, no module caches, one version gate."""

from __future__ import annotations

import importlib
import inspect
import json
import subprocess
import sys
from collections import OrderedDict, deque
from pathlib import Path

import pytest
import tomllib
from orca_fixtures import synthetic_items, tiny_trained_checkpoint, write_jsonl

REPO = Path(__file__).resolve().parents[2]
PACKAGE_MODULES = (
    "orca_judge.metric.settings",
    "orca_judge.metric.payloads",
    "orca_judge.metric.judge_pass",
    "eval_plugins.lm_eval.metric",
    "orca_judge.metric.per_item",
    "eval_plugins.orca_wiring",
    "eval_plugins.lm_eval.orca_human",
    "eval_plugins.lm_eval.compat",
)
MUTABLE = (dict, list, set, OrderedDict, deque, bytearray)


def _imported_in_fresh_python(code: str) -> list[str]:
    proc = subprocess.run(
        [sys.executable, "-c", f"{code}\nimport json, sys; print(json.dumps(sorted(sys.modules)))"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    return json.loads(proc.stdout)


def test_judge_and_trainer_import_no_harness():
    core = (
        "import orca_judge.judge, orca_judge.training.loop, orca_judge.calibration, orca_judge.data"
    )
    modules = _imported_in_fresh_python(core)
    assert "orca_judge.judge" in modules and "orca_judge.training.loop" in modules
    assert not [m for m in modules if m == "lm_eval" or m.startswith("lm_eval.")]


def test_settings_payloads_and_per_item_import_no_harness():
    modules = _imported_in_fresh_python(
        "import orca_judge.metric.settings, orca_judge.metric.payloads, orca_judge.metric.per_item"
    )
    assert "orca_judge.metric.per_item" in modules
    assert "lm_eval" not in modules


@pytest.mark.parametrize("name", PACKAGE_MODULES)
def test_no_module_level_mutable_state(name):
    module = importlib.import_module(name)
    mutable = {
        attr: type(value).__name__
        for attr, value in vars(module).items()
        if not attr.startswith("__") and isinstance(value, MUTABLE)
    }
    assert mutable == {}


def test_entry_points_and_task_config_name_the_new_package():
    project = (REPO / "pyproject.toml").read_text()
    targets = {
        "eval_plugins.lm_eval.metric:orca",
        "eval_plugins.lm_eval.orca_human:OrcaReplayLM",
    }
    entry_points = tomllib.loads(project)["project"]["entry-points"]
    named = {
        entry_points["lm_eval.metrics"]["orca"],
        entry_points["lm_eval.models"]["orca-replay"],
    }
    assert named == targets
    assert "orca_judge.lm_eval_" not in project.replace("orca_judge.lm_eval_samples", "")
    for target in targets:
        module, _, attr = target.partition(":")
        assert callable(getattr(importlib.import_module(module), attr))
    text = (REPO / "task_configs" / "orca_human" / "orca_human.yaml").read_text()
    assert "!function eval_plugins.lm_eval.orca_human.load_dataset" in text
    assert '"eval_plugins.lm_eval",' in project


def test_compat_names_the_lm_eval_versions_of_the_one_gate():
    from importlib.metadata import version

    from eval_common.harness_versions import supported_range, unsupported_version
    from eval_plugins.lm_eval import compat

    assert unsupported_version("lm-eval", version("lm-eval")) is None
    assert "0.4.13" in inspect.getdoc(compat) and supported_range("lm-eval") in inspect.getdoc(
        compat
    )
    # No other module of the package reaches into lm-eval's private attributes or frames.
    for name in PACKAGE_MODULES:
        if name.endswith(".compat"):
            continue
        source = inspect.getsource(importlib.import_module(name))
        assert "_getframe" not in source and "._metric_fn_list" not in source, name
        assert "evaluator.evaluate" not in source, name


def test_sessions_are_scoped_and_share_only_folder_and_failure_log(tmp_path):
    from orca_judge.metric.judge_pass import (
        JudgeSession,
        active_session,
        evaluation_session,
        session_scope,
    )

    assert active_session() is None
    outer = JudgeSession(output_folder=lambda: tmp_path)
    with session_scope(outer):
        with evaluation_session() as first:
            assert active_session() is first
        with evaluation_session() as second:
            second.record_failure("judge failed")
        assert active_session() is outer
    assert active_session() is None
    assert first is not second and first.judges is not second.judges
    assert first.passes is not second.passes
    assert second.folder(None) == tmp_path and second.folder("elsewhere") == Path("elsewhere")
    assert outer.failures == ["judge failed"]
    assert not second.record_failure("judge failed")


@pytest.mark.slow
def test_two_evaluations_in_one_process_load_and_judge_separately(tmp_path, monkeypatch):
    import lm_eval
    from lm_eval.tasks import TaskManager

    from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
    from eval_plugins.lm_eval.registration import register_all
    from orca_judge.judge import OrcaJudge
    from orca_judge.metric import judge_pass

    register_all()
    judge = tiny_trained_checkpoint()
    items = write_jsonl(tmp_path / "rated.jsonl", synthetic_items(8, 3, "h"))
    out = tmp_path / "per_item"
    loads: list[str] = []
    sessions: list[judge_pass.JudgeSession] = []
    load = OrcaJudge.from_pretrained.__func__
    run = judge_pass.JudgeSession.run

    def counting_load(cls, path, **kwargs):
        loads.append(str(path))
        return load(cls, path, **kwargs)

    def recording_run(self, *args, **kwargs):
        sessions.append(self)
        return run(self, *args, **kwargs)

    monkeypatch.setattr(OrcaJudge, "from_pretrained", classmethod(counting_load))
    monkeypatch.setattr(judge_pass.JudgeSession, "run", recording_run)
    metadata = {
        "orca_data": str(items),
        "orca": {"checkpoint": str(judge), "output_dir": str(out), "device": "cpu"},
    }
    figures = []
    for _ in range(2):
        manager = TaskManager(
            include_path=[str(task_config_dir() / "orca_human")],
            include_defaults=False,
            metadata=metadata,
        )
        results = lm_eval.simple_evaluate(
            model="orca-replay",
            model_args=f"path={items}",
            tasks=["orca_human"],
            task_manager=manager,
        )
        figures.append(results["results"]["orca_human"])
    # One judge load and one pass per evaluation, read by every figure; nothing carried over.
    assert loads == [str(judge), str(judge)]
    first, second = dict.fromkeys(sessions)
    assert first is not second
    assert len(first.passes) == len(second.passes) == 1
    assert next(iter(first.passes.values())) is not next(iter(second.passes.values()))
    assert len(sorted(out.glob("orca_orca_human_none_*.jsonl"))) == 2
    assert figures[0]["orca,none"] == pytest.approx(figures[1]["orca,none"])
    assert figures[0]["orca_rho,none"] == pytest.approx(figures[1]["orca_rho,none"])
    assert judge_pass.active_session() is None
