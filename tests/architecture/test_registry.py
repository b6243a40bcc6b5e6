"""The one name table (`eval_plugins.names`) against pyproject.toml and every list of names.

pyproject.toml's entry points are the table's, group for group; every lm-eval target imports;
no other module keeps its own collection of our model names.
"""

from __future__ import annotations

import ast
import importlib.util
from importlib import import_module
from pathlib import Path

import pytest

from eval_plugins import names
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir

tomllib = pytest.importorskip("tomllib")  # Python 3.11+

REPO = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]
# A choice among the table's models, not a registry: the baselines aqua demo runs.
CHOICES = {("eval_plugins/lm_eval/aqua/demo.py", "DEMO_MODELS")}


def test_pyproject_declares_exactly_the_table_for_each_group_a_harness_reads():
    declared = PROJECT["entry-points"]
    assert set(declared) == set(names.ENTRY_POINT_GROUPS)
    for group, (harness, kind) in names.ENTRY_POINT_GROUPS.items():
        if group == "lmms_eval.models":
            # One entry point, every manifest (eval_plugins.lmms_eval.manifests).
            assert declared[group] == dict([names.LMMS_MANIFESTS])
        else:
            assert declared[group] == names.targets(harness, kind), group


def test_every_lm_eval_target_imports_and_is_what_its_kind_needs():
    from lm_eval.api.model import LM

    for name, target in names.targets(names.LM_EVAL, "models").items():
        assert issubclass(names.load(target), LM), name
    for kind in ("metrics", "aggregations"):
        for target in names.targets(names.LM_EVAL, kind).values():
            assert callable(names.load(target))
    (folder,) = names.targets(names.LM_EVAL, "tasks").values()
    assert Path(str(import_module(folder).__path__[0])) == task_config_dir()


def test_the_lmms_eval_targets_name_modules_that_exist():
    # lmms-eval itself is in its own environment (tests_lmms/ loads these there).
    for kind in ("models", "metrics", "aggregations"):
        for name, target in names.targets(names.LMMS_EVAL, kind).items():
            module = target.partition(":")[0]
            assert importlib.util.find_spec(module.rpartition(".")[0]) is not None, name
            assert (REPO / (module.replace(".", "/") + ".py")).is_file(), name
    assert set(names.targets(names.LMMS_EVAL, "models")) < set(
        names.targets(names.LM_EVAL, "models")
    )


def test_aqua_eval_lists_the_table_s_models():
    from eval_plugins.cli.aqua_eval import model_names

    assert model_names() == list(names.targets(names.LM_EVAL, "models"))


def model_name_collections(path: Path) -> list[tuple[int, str, set[str]]]:
    """(line, assigned name, our model names) of each literal collection naming two or more."""
    ours = set(names.targets(names.LM_EVAL, "models")) | set(
        names.targets(names.LMMS_EVAL, "models")
    )
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(node, (ast.Assign, ast.AnnAssign)) or node.value is None:
            continue
        target = node.targets[0] if isinstance(node, ast.Assign) else node.target
        for value in ast.walk(node.value):
            keys = value.keys if isinstance(value, ast.Dict) else getattr(value, "elts", [])
            strings = {k.value for k in keys if isinstance(k, ast.Constant) and k.value in ours}
            if len(strings) >= 2:
                found.append((node.lineno, ast.unparse(target), strings))
    return found


def test_no_module_but_the_table_keeps_a_list_of_our_model_names():
    bad = []
    for package in ("aqua_tasks", "orca_judge", "eval_common", "eval_plugins"):
        for path in sorted((REPO / package).rglob("*.py")):
            where = str(path.relative_to(REPO))
            if where == "eval_plugins/names.py":
                continue
            for line, target, found in model_name_collections(path):
                if (where, target) in CHOICES:
                    continue
                bad.append(f"{where}:{line} {target}: {sorted(found)}")
    assert bad == []
    assert model_name_collections(REPO / "eval_plugins" / "names.py")


def test_register_all_registers_every_table_model_lazily_and_keeps_lm_eval_s_own():
    from lm_eval.api.registry import get_model, model_registry

    from eval_plugins.lm_eval.registration import register_all, register_models, same_target

    register_all()
    held = dict(model_registry.items())
    for name, target in names.targets(names.LM_EVAL, "models").items():
        assert same_target(held[name], target), name
    assert register_models() == []  # idempotent: nothing left to add
    assert get_model("dummy").__name__ == "DummyLM"
    assert get_model("aqua-random") is names.load(
        names.targets(names.LM_EVAL, "models")["aqua-random"]
    )


def test_a_name_lm_eval_read_from_our_entry_points_is_left_as_it_is(monkeypatch):
    from importlib.metadata import EntryPoint

    from lm_eval.api.registry import model_registry

    from eval_plugins.lm_eval.registration import register_models

    target = names.targets(names.LM_EVAL, "models")["aqua-first-option"]
    point = EntryPoint("aqua-first-option", target, "lm_eval.models")
    held = {**dict(model_registry.items()), "aqua-first-option": point}
    monkeypatch.setattr(model_registry, "items", held.items)
    registered = []
    monkeypatch.setattr(model_registry, "register", lambda *a, **k: registered.append(a))
    register_models()
    assert ("aqua-first-option",) not in registered
