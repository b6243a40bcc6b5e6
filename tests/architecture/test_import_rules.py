"""The layout's rules, read from the imports and the source of every package module.

Each rule is in docs/architecture.md's table; a change that breaks one fails here with
the module and the line that broke it.
"""

from __future__ import annotations

import ast
import importlib.util
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from harness_touches import defined_private_names, harness_method_names, touches

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("aqua_tasks", "orca_judge", "eval_common", "eval_plugins")
HARNESSES = ("lm_eval", "lmms_eval")
# The plugin edge: one room per harness, shared by both packages, above them.
EDGE = "eval_plugins"
# One adapter per harness, inside the edge: everything harness-specific of both packages.
ADAPTERS = tuple(f"{EDGE}.{harness}" for harness in HARNESSES)
COMMAND_LINES = ("aqua_tasks.cli", "orca_judge.cli", "eval_plugins.cli")
# Harness modules whose functions and methods a plugin might replace (read, not imported):
# tasks, the task index, the evaluator, the CLI. Model classes are subclassed, not patched.
HARNESS_SOURCES = {
    "lm_eval": ("api/task.py", "evaluator.py", "evaluator_utils.py", "utils.py",
                "tasks/manager.py", "__init__.py"),
    "lmms_eval": ("api/task.py", "evaluator.py", "evaluator_utils.py", "tasks/__init__.py",
                  "__main__.py"),
}  # fmt: skip
# Each package's one error family: every room of that package may raise and catch it.
ERROR_MODULES = {
    "aqua_tasks": "aqua_tasks.errors",
    "orca_judge": "orca_judge.errors",
    "eval_common": "eval_common.errors",
}
MAX_MODULE_LINES = 600
MAX_MODULES_PER_FOLDER = 15


def module_name(path: Path) -> str:
    parts = list(path.relative_to(REPO).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def package_modules() -> dict[str, Path]:
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            found[module_name(path)] = path
    return found


MODULES = package_modules()


def imports_of(path: Path) -> Iterator[tuple[int, str]]:
    """(line, imported module) for every import of a file, lazy ones inside functions included."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name
        elif isinstance(node, ast.ImportFrom) and node.module:
            assert node.level == 0, f"{path}:{node.lineno}: relative import; write it absolute"
            yield node.lineno, node.module
            for alias in node.names:  # `from pkg import module` imports pkg.module
                if f"{node.module}.{alias.name}" in MODULES:
                    yield node.lineno, f"{node.module}.{alias.name}"


def within(module: str, package: str) -> bool:
    return module == package or module.startswith(package + ".")


def own_errors(module: str, imported: str) -> bool:
    """Whether `imported` is the error family of `module`'s own package."""
    return imported == ERROR_MODULES[module.split(".")[0]]


def violations(rule) -> list[str]:
    bad = []
    for name, path in MODULES.items():
        for line, imported in imports_of(path):
            if rule(name, imported):
                bad.append(f"{path.relative_to(REPO)}:{line} imports {imported}")
    return bad


def test_the_judge_and_the_shared_module_import_nothing_of_the_benchmark():
    assert not violations(
        lambda mod, imp: (
            within(imp, "aqua_tasks") and (within(mod, "orca_judge") or within(mod, "eval_common"))
        )
    )


def test_the_shared_module_imports_neither_package():
    assert not violations(lambda mod, imp: within(mod, "eval_common") and within(imp, "orca_judge"))


def test_core_imports_no_harness_no_torch_and_nothing_outside_core():
    def rule(mod: str, imp: str) -> bool:
        if not within(mod, "aqua_tasks.core"):
            return False
        if any(within(imp, lib) for lib in (*HARNESSES, "torch", "transformers")):
            return True
        if own_errors(mod, imp):
            return False
        return within(imp, "aqua_tasks") and not within(imp, "aqua_tasks.core")

    assert not violations(rule)


def test_build_imports_no_harness_no_torch_at_module_level_and_only_core():
    # aqua build runs without a harness; only its `hf` generator imports torch/transformers,
    # lazily inside the one function that needs them. Its HTTP client and reply cache are
    # eval_common's.
    allowed = ("aqua_tasks.build", "aqua_tasks.core")
    lazy_ok = {
        ("aqua_tasks.build.iaqd_llm", "torch"),
        ("aqua_tasks.build.iaqd_llm", "transformers"),
        ("aqua_tasks.build.source", "datasets"),
    }

    def rule(mod: str, imp: str) -> bool:
        if not within(mod, "aqua_tasks.build"):
            return False
        if any(within(imp, lib) for lib in (*HARNESSES, "torch", "transformers", "datasets")):
            return (mod, imp.split(".")[0]) not in lazy_ok
        if own_errors(mod, imp):
            return False
        return within(imp, "aqua_tasks") and not any(within(imp, a) for a in allowed)

    assert not violations(rule)
    top_level = [
        f"{path.relative_to(REPO)}:{node.lineno}"
        for name, path in MODULES.items()
        if within(name, "aqua_tasks.build")
        for node in ast.parse(path.read_text(encoding="utf-8")).body
        if isinstance(node, (ast.Import, ast.ImportFrom))
        and any(
            within(alias.name if isinstance(node, ast.Import) else node.module or "", lib)
            for alias in node.names
            for lib in ("torch", "transformers", "datasets")
        )
    ]
    assert top_level == []


def test_the_task_definition_imports_no_harness_and_no_adapter():
    def rule(mod: str, imp: str) -> bool:
        if not within(mod, "aqua_tasks.task"):
            return False
        return any(within(imp, place) for place in (*HARNESSES, *ADAPTERS))

    assert not violations(rule)


# docs/architecture.md's table: room -> the rooms of ours it may import (besides itself
# and the top level of its own package). Libraries are checked by the rules above.
ROOM_MAY_IMPORT = {
    "aqua_tasks.core": {"eval_common"},
    "aqua_tasks.audio": {"aqua_tasks.core", "eval_common"},
    "aqua_tasks.task": {
        "aqua_tasks.core",
        "aqua_tasks.audio",
        "eval_common",
        "orca_judge",
        "orca_judge.metric",
        "orca_judge.prompted",
    },
    "aqua_tasks.runs": {"aqua_tasks.core", "eval_common", "orca_judge", "orca_judge.metric"},
    "aqua_tasks.reports": {"aqua_tasks.core", "aqua_tasks.runs", "eval_common", "orca_judge"},
    "aqua_tasks.gate": {"aqua_tasks.core", "aqua_tasks.runs", "aqua_tasks.reports", "eval_common"},
    "aqua_tasks.models": {"aqua_tasks.core", "aqua_tasks.audio", "aqua_tasks.runs", "eval_common"},
    "aqua_tasks.build": {"aqua_tasks.core", "eval_common"},
    "orca_judge": {"eval_common", "orca_judge.checkpoint"},
    "orca_judge.checkpoint": {"eval_common", "orca_judge"},
    "orca_judge.training": {
        "eval_common",
        "orca_judge",
        "orca_judge.checkpoint",
        "orca_judge.prompted",
    },
    "orca_judge.metric": {"eval_common", "orca_judge", "orca_judge.checkpoint"},
    "orca_judge.prompted": {
        "eval_common",
        "orca_judge",
        "orca_judge.checkpoint",
        "orca_judge.metric",
    },
    "eval_common": set(),
}
ROOMS = sorted(
    {*ROOM_MAY_IMPORT, *ADAPTERS, *COMMAND_LINES, EDGE, "aqua_tasks", "orca_judge"},
    key=len,
    reverse=True,
)


def room_of(module: str) -> str | None:
    return next((room for room in ROOMS if within(module, room)), None)


def test_each_room_imports_only_what_the_architecture_table_allows():
    def rule(mod: str, imp: str) -> bool:
        own, other = room_of(mod), room_of(imp)
        if own not in ROOM_MAY_IMPORT or other is None or other == own or own_errors(mod, imp):
            return False
        return other not in ROOM_MAY_IMPORT[own]

    assert not violations(rule)


def test_the_error_families_import_only_the_shared_root():
    # Catching an error must load nothing: the start-up hook and `lm_eval ls` catch them.
    bad = [
        f"{MODULES[errors].relative_to(REPO)}:{line} imports {imported}"
        for errors in ERROR_MODULES.values()
        for line, imported in imports_of(MODULES[errors])
        if imported not in ("__future__", "eval_common.errors")
    ]
    assert bad == []


def test_harness_adapters_are_imported_only_by_command_lines_and_the_plugin_edge():
    def rule(mod: str, imp: str) -> bool:
        adapter = next((a for a in ADAPTERS if within(imp, a)), None)
        if adapter is None or within(mod, adapter):
            return False
        return not any(within(mod, place) for place in (*COMMAND_LINES, EDGE))

    assert not violations(rule)


def test_no_adapter_imports_another_adapter():
    # Not the other package's, not the other harness's: what they share is the edge's.
    def rule(mod: str, imp: str) -> bool:
        own = next((a for a in ADAPTERS if within(mod, a)), None)
        other = next((a for a in ADAPTERS if within(imp, a)), None)
        return own is not None and other is not None and own != other

    assert not violations(rule)


def test_the_plugin_edge_is_a_layer_above_both_packages():
    # Only the command-line modules (the top floor) import the edge; the edge imports no
    # command line, and no module below the edge names it (not even lazily, by string).
    def command_line(mod: str) -> bool:  # a `python -m` entry is a command line too
        return mod.endswith(".__main__") or any(within(mod, c) for c in COMMAND_LINES)

    def rule(mod: str, imp: str) -> bool:
        if within(imp, EDGE):
            return not (within(mod, EDGE) or command_line(mod))
        return within(mod, EDGE) and not command_line(mod) and command_line(imp)

    assert not violations(rule)
    assert any(within(imp, EDGE) for _, imp in imports_of(MODULES["eval_plugins.cli.aqua_eval"]))


def test_only_command_line_modules_parse_arguments():
    def rule(mod: str, imp: str) -> bool:
        places = ("aqua_tasks.cli", "orca_judge.cli", "eval_plugins.cli", "eval_common.cli")
        return imp == "argparse" and not any(within(mod, p) for p in places)

    assert not violations(rule)


def harness_methods() -> set[str]:
    """Functions and methods of the installed harnesses' modules a plugin might replace."""
    paths = []
    for harness, names in HARNESS_SOURCES.items():
        spec = importlib.util.find_spec(harness)
        if spec is not None and spec.origin:
            paths += [Path(spec.origin).parent / n for n in names]
    return harness_method_names(p for p in paths if p.is_file())


def test_harness_internals_are_touched_only_in_the_plugin_edge():
    own = defined_private_names(path.read_text(encoding="utf-8") for path in MODULES.values())
    methods = harness_methods()
    bad = [
        f"{path.relative_to(REPO)}:{line}"
        for name, path in MODULES.items()
        if not within(name, EDGE)
        for line in touches(path.read_text(encoding="utf-8"), own, methods)
    ]
    assert bad == []


def test_the_plugin_edge_is_where_the_harness_internals_are():
    # Guards the rule above against going blind: it does see the edge's patches.
    own = defined_private_names(path.read_text(encoding="utf-8") for path in MODULES.values())
    seen = {
        name: touches(path.read_text(encoding="utf-8"), own, harness_methods())
        for name, path in MODULES.items()
        if within(name, EDGE)
    }
    assert len(seen["eval_plugins.lm_eval.compat"]) >= 5
    assert seen["eval_plugins.lmms_eval.compat"] and seen["eval_plugins.orca_wiring"]


@pytest.mark.parametrize(
    "words",
    [("sys._getframe", "f_locals", "inspect.currentframe"), ("DeprecationWarning", "module_moved")],
    ids=["no frame walking", "no deprecation shims"],
)
def test_package_code_has_none_of(words):
    bad = [
        f"{path.relative_to(REPO)}: {word}"
        for path in MODULES.values()
        for word in words
        if word in path.read_text(encoding="utf-8")
    ]
    assert not bad


def test_no_module_over_the_size_limit():
    sizes = {
        str(path.relative_to(REPO)): len(path.read_text(encoding="utf-8").splitlines())
        for path in MODULES.values()
    }
    assert {p: n for p, n in sizes.items() if n > MAX_MODULE_LINES} == {}


def test_every_package_folder_holds_few_modules():
    folders: dict[Path, int] = {}
    for path in MODULES.values():
        folders[path.parent] = folders.get(path.parent, 0) + 1
    assert {
        str(f.relative_to(REPO)): n for f, n in folders.items() if n > MAX_MODULES_PER_FOLDER
    } == {}


def test_the_rules_see_every_room():
    # Guards the tests above against a rename that would make them vacuous.
    rooms = {
        name for name in MODULES if name.count(".") == 1 and MODULES[name].name == "__init__.py"
    }
    assert {
        "aqua_tasks.core",
        "aqua_tasks.audio",
        "aqua_tasks.build",
        "aqua_tasks.models",
        "aqua_tasks.runs",
        "aqua_tasks.reports",
        "aqua_tasks.gate",
        "aqua_tasks.task",
        "aqua_tasks.cli",
        "orca_judge.checkpoint",
        "orca_judge.training",
        "orca_judge.metric",
        "orca_judge.prompted",
        "orca_judge.cli",
        "eval_plugins.lm_eval",
        "eval_plugins.lmms_eval",
    } <= rooms
    assert len(MODULES) > 80


def test_few_harness_functions_are_patched_each_declared_by_its_seam():
    # docs/architecture.md's table: each seam names the harness functions it replaces and the
    # private tables of built tasks its code writes; the budget counts functions, not decorators.
    import eval_plugins.lm_eval.compat
    import eval_plugins.lmms_eval.compat  # noqa: F401
    from eval_plugins.seams import SEAMS

    decorators = [
        name
        for name, path in MODULES.items()
        for line in path.read_text(encoding="utf-8").splitlines()
        if line.lstrip().startswith("@seam(")
    ]
    assert len(decorators) == len(SEAMS) <= 5, decorators
    for harness in ("lm-eval", "lmms-eval"):
        patched = [p for s in SEAMS.values() if s.harness == harness for p in s.patches]
        assert len(patched) == len(set(patched)) <= 8, (harness, patched)
    # Every private table any module names is one the evaluation seams declare writing.
    named = {
        match
        for path in MODULES.values()
        for match in re.findall(
            r"\b_(?:metric_fn_list|metric_fn_kwargs|aggregation_list|higher_is_better)\b",
            path.read_text(encoding="utf-8"),
        )
    }
    declared = {t for s in SEAMS.values() for t in s.tables}
    assert named and named <= declared, named - declared
