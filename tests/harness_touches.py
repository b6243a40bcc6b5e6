"""The AST rule behind `test_harness_internals_are_touched_only_in_the_plugin_edge`.

`touches(source, own_private, harness_methods)` lists, for one module's source, every place it
touches a harness internal:

- an import of a private harness module or name (`import lm_eval._cli`,
  `from lm_eval.tasks import _yaml_loader`, `from lm_eval.x import _y`);
- a `_private` attribute of anything imported from a harness (`evaluator_utils._compute...`),
  and a `_private` attribute this project does not define itself, whatever object it is read
  from (`task._metric_fn_list` on a parameter), also through getattr/hasattr/setattr/delattr
  with the name as a string;
- an assignment, augmented assignment or deletion of an attribute or item of anything
  imported from a harness, and setattr/delattr on it (`evaluator.evaluate = ...`);
- an assignment of a harness method or function by name (`harness_methods`) on an object a
  function was handed (a parameter other than `self`/`cls`: `task.process_results = wrapper`).

Names are bound per module, lazy imports inside functions included; `sys.modules["lm_eval…"]`
counts as imported from the harness.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

HARNESSES = ("lm_eval", "lmms_eval")
# Public API of namedtuples, which is spelled with a leading underscore.
NAMEDTUPLE_API = frozenset({"_replace", "_asdict", "_fields", "_make", "_field_defaults"})
ATTRIBUTE_CALLS = ("getattr", "hasattr", "setattr", "delattr")


def is_private(name: str) -> bool:
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def from_harness(module: str) -> bool:
    return module.split(".")[0] in HARNESSES


def defined_private_names(sources: Iterable[str]) -> set[str]:
    """Every `_name` our own code defines: functions, classes, assigned names and attributes,
    and the attribute names our string constants spell (markers set on our wrappers)."""
    found: set[str] = set()
    for source in sources:
        for node in ast.walk(ast.parse(source)):
            value = getattr(node, "value", None) if isinstance(node, ast.Assign) else None
            if isinstance(value, ast.Constant) and str(value.value).isidentifier():
                found.add(str(value.value))
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                found.add(node.name)
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                found.add(node.id)
            elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
                found.add(node.attr)
            elif isinstance(node, ast.arg):
                found.add(node.arg)
    return {name for name in found if is_private(name)}


def harness_method_names(paths: Iterable[Path]) -> set[str]:
    """Names of the functions and methods (not properties) defined in harness source files."""
    found: set[str] = set()
    for path in paths:
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                decorators = {ast.unparse(d) for d in node.decorator_list}
                if not decorators & {"property", "cached_property", "functools.cached_property"}:
                    found.add(node.name)
    return {name for name in found if not name.startswith("__")}


def _root(node: ast.AST) -> ast.AST:
    while isinstance(node, (ast.Attribute, ast.Subscript, ast.Call)):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node


class _Module:
    def __init__(self, tree: ast.Module) -> None:
        self.tree = tree
        self.bound: set[str] = set()  # names bound to harness modules or objects
        self.constants: dict[str, str] = {}  # module-level string constants
        # Parameters: objects handed in from outside, possibly the harness's.
        self.parameters = {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)} - {
            "self",
            "cls",
        }
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    if from_harness(alias.name):
                        self.bound.add(alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and from_harness(node.module):
                self.bound.update(alias.asname or alias.name for alias in node.names)
        for node in tree.body:
            if (
                isinstance(node, ast.Assign)
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, str)
            ):
                for target in node.targets:
                    if isinstance(target, ast.Name):
                        self.constants[target.id] = node.value.value

    def harness_rooted(self, node: ast.AST) -> bool:
        root = _root(node)
        if isinstance(root, ast.Name) and root.id in self.bound:
            return True
        # sys.modules["lm_eval..."]
        while isinstance(node, (ast.Attribute, ast.Call)):
            node = node.func if isinstance(node, ast.Call) else node.value
        if isinstance(node, ast.Subscript) and ast.unparse(node.value) == "sys.modules":
            key = node.slice
            return isinstance(key, ast.Constant) and from_harness(str(key.value))
        return False

    def parameter(self, node: ast.AST) -> bool:
        root = _root(node)
        return isinstance(root, ast.Name) and root.id in self.parameters

    def string(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            return node.value
        if isinstance(node, ast.Name):
            return self.constants.get(node.id)
        return None


def touches(source: str, own_private: set[str], harness_methods: set[str]) -> list[str]:
    """`line: what` for every touch of a harness internal in one module's source."""
    module = _Module(ast.parse(source))
    found: list[str] = []

    def say(node: ast.AST, what: str) -> None:
        found.append(f"{node.lineno}: {what}")

    def foreign_private(name: str) -> bool:
        return is_private(name) and name not in own_private and name not in NAMEDTUPLE_API

    for node in ast.walk(module.tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if from_harness(alias.name) and any(map(is_private, alias.name.split("."))):
                    say(node, f"imports the private harness module {alias.name}")
        elif isinstance(node, ast.ImportFrom) and node.module and from_harness(node.module):
            parts = [*node.module.split("."), *(a.name for a in node.names)]
            if any(map(is_private, parts)):
                names = ", ".join(a.name for a in node.names)
                say(node, f"imports private harness names ({node.module}: {names})")
        elif isinstance(node, ast.Attribute) and is_private(node.attr):
            if module.harness_rooted(node.value):
                say(node, f"reads the harness's private {ast.unparse(node)}")
            elif foreign_private(node.attr):
                say(node, f"reads {ast.unparse(node)}, a private name this project does not define")
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Name)
            and node.func.id in ATTRIBUTE_CALLS
            and len(node.args) >= 2
        ):
            call, owner = node.func.id, node.args[0]
            name = module.string(node.args[1]) or ""
            if module.harness_rooted(owner) and call in ("setattr", "delattr"):
                say(node, f"{call} on the harness's {ast.unparse(owner)}")
            elif foreign_private(name) or (is_private(name) and module.harness_rooted(owner)):
                say(node, f"{call} of the private name {name!r}")
            elif call == "setattr" and name in harness_methods and module.parameter(owner):
                say(node, f"setattr replaces the harness method {name!r}")
        if isinstance(node, (ast.Assign, ast.AugAssign, ast.AnnAssign, ast.Delete)):
            targets = node.targets if isinstance(node, (ast.Assign, ast.Delete)) else [node.target]
            for target in targets:
                if not isinstance(target, (ast.Attribute, ast.Subscript)):
                    continue
                if module.harness_rooted(target.value):
                    say(node, f"assigns the harness's {ast.unparse(target)}")
                elif (
                    isinstance(target, ast.Attribute)
                    and target.attr in harness_methods
                    and module.parameter(target.value)
                ):
                    say(node, f"replaces the harness method {ast.unparse(target)}")
    return sorted(set(found), key=lambda line: int(line.split(":")[0]))
