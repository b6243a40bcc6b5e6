"""One error family per package: every error class in the package's `errors.py`, under its root.

`eval_common.errors.EvalError` is the root of all three families, so the one command wrapper
catches them all; each class keeps the builtin base its callers catch (`except ValueError`).
"""

from __future__ import annotations

import ast
import builtins
import inspect
from importlib import import_module

import pytest
from test_import_rules import ERROR_MODULES, MODULES, REPO

from aqua_tasks.errors import AquaError
from eval_common.errors import EvalError
from orca_judge.errors import OrcaError

ROOTS = {"aqua_tasks": AquaError, "orca_judge": OrcaError, "eval_common": EvalError}
# Exceptions that carry a reason label between the functions of one room and are always
# caught there: control flow, not errors a command reports (named in aqua_tasks.errors).
CONTROL_FLOW = {
    ("aqua_tasks.build.builder", "Skip"),
    ("aqua_tasks.build.iaqd", "InvalidDraft"),
    ("eval_common.http", "RequestFailure"),
}
# The builtin bases callers catch, kept when the classes moved into the families.
BUILTIN_BASES = {
    "InputFileError": (ValueError,),
    "OutputError": (ValueError,),
    "AquaDataError": (ValueError,),
    "RunError": (ValueError,),
    "AudioFileError": (FileNotFoundError, ValueError),
    "ClipCheckError": (FileNotFoundError, ValueError),
    "PrepareError": (ValueError,),
    "BuildError": (ValueError,),
    "ModelArgumentError": (ValueError,),
    "EndpointError": (RuntimeError,),
    "UncollectedOutcomesError": (RuntimeError,),
    "PlottingUnavailable": (RuntimeError,),
    "DataError": (ValueError,),
    "CalibrationError": (ValueError,),
    "CheckpointError": (ValueError,),
    "BackboneMismatchError": (ValueError,),
    "BackboneLoadError": (RuntimeError,),
    "OrcaMetricError": (ValueError,),
    "LlmJudgeError": (ValueError,),
    "JudgeEndpointError": (RuntimeError,),
    "RunConflictError": (ValueError,),
}


def family(package: str) -> dict[str, type[BaseException]]:
    module = import_module(ERROR_MODULES[package])
    return {
        name: cls
        for name, cls in inspect.getmembers(module, inspect.isclass)
        if cls.__module__ == module.__name__ and issubclass(cls, BaseException)
    }


@pytest.mark.parametrize("package", sorted(ROOTS))
def test_every_error_class_descends_from_its_package_root_and_is_drawn(package):
    classes = family(package)
    assert len(classes) >= 3
    assert {n for n, c in classes.items() if not issubclass(c, ROOTS[package])} == set()
    assert issubclass(ROOTS[package], EvalError)
    doc = import_module(ERROR_MODULES[package]).__doc__
    assert [n for n in classes if n not in doc] == []


def test_every_error_keeps_the_builtin_bases_its_callers_catch():
    classes = {n: c for package in ROOTS for n, c in family(package).items()}
    assert set(BUILTIN_BASES) <= set(classes)
    assert {n: b for n, b in BUILTIN_BASES.items() if not issubclass(classes[n], b)} == {}
    # Narrower errors of a run are RunErrors, so `except RunError` callers read them all.
    from aqua_tasks.errors import JudgeResultsError, LmmsLogError, RunError, RunReadError

    assert all(issubclass(c, RunError) for c in (JudgeResultsError, LmmsLogError, RunReadError))


def _exception_names() -> set[str]:
    ours = {n for package in ROOTS for n in family(package)}
    theirs = {
        n for n, v in vars(builtins).items() if isinstance(v, type) and issubclass(v, BaseException)
    }
    return ours | theirs


def test_no_other_module_of_a_package_defines_an_exception_class():
    exceptions = _exception_names()
    found = set()
    for name, path in MODULES.items():
        if name in ERROR_MODULES.values():
            continue
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                bases = {ast.unparse(b).rsplit(".", 1)[-1] for b in node.bases}
                if bases & exceptions:
                    found.add((name, node.name))
    assert found - CONTROL_FLOW == set(), "move them into the package's errors.py"
    assert found == CONTROL_FLOW  # each control-flow exception still exists where it is listed
    doc = import_module("aqua_tasks.errors").__doc__
    assert [n for _, n in CONTROL_FLOW if f"`{n}`" not in doc] == []


def _same_message_reraises(tree: ast.AST) -> list[int]:
    """Lines of `except X as e: raise Y(str(e))` (or `raise Y(e)`): one message, two types."""
    lines = []
    for handler in ast.walk(tree):
        if not isinstance(handler, ast.ExceptHandler) or handler.name is None:
            continue
        for node in ast.walk(handler):
            if not (isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call)):
                continue
            args = node.exc.args
            if len(args) == 1 and ast.unparse(args[0]) in (f"str({handler.name})", handler.name):
                lines.append(node.lineno)
    return lines


def test_no_error_is_re_raised_as_another_type_with_the_same_message():
    found = {}
    for path in MODULES.values():
        lines = _same_message_reraises(ast.parse(path.read_text(encoding="utf-8")))
        # argparse's type= functions must raise its ArgumentTypeError: not our family.
        lines = [
            n for n in lines if "ArgumentTypeError" not in path.read_text().splitlines()[n - 1]
        ]
        if lines:
            found[str(path.relative_to(REPO))] = len(lines)
    assert found == {}
