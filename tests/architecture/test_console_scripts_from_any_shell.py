"""The README's test command works from a shell where the venv is not activated: every test
starts a console script by its path next to `sys.executable`, never by a bare name on PATH."""

from __future__ import annotations

import ast
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[2]
# Commands the suites start: ours, the harnesses' and the launchers' console scripts.
HARNESS_SCRIPTS = {"lm_eval", "lm-eval", "lmms-eval", "accelerate", "torchrun"}
RUNNERS = {"run", "Popen", "check_output", "check_call", "call", "run_cli", "run_shell"}


def console_scripts() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    return set(project["scripts"]) | HARNESS_SCRIPTS


def bare_script_calls(source: str, scripts: set[str]) -> list[int]:
    """Lines where a subprocess-starting call names one of `scripts` as a bare string."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        name = getattr(node.func, "attr", None) or getattr(node.func, "id", None)
        if name not in RUNNERS:
            continue
        first = node.args[0]
        if isinstance(first, ast.List | ast.Tuple) and first.elts:
            first = first.elts[0]
        if isinstance(first, ast.Constant) and first.value in scripts:
            found.append(node.lineno)
    return found


def test_the_scan_finds_a_bare_script_name():
    scripts = {"lm_eval"}
    assert bare_script_calls('subprocess.run(["lm_eval", "--tasks", "x"])', scripts) == [1]
    assert bare_script_calls('run_cli("lm_eval", "--model", "m")', scripts) == [1]
    assert bare_script_calls('subprocess.run([str(BIN / "lm_eval")])', scripts) == []


def test_no_test_starts_a_console_script_from_path():
    scripts = console_scripts()
    offenders = [
        f"{path.relative_to(ROOT)}:{line}"
        for folder in ("tests", "tests_lmms", "tests_lm_eval_next")
        for path in sorted((ROOT / folder).rglob("*.py"))
        for line in bare_script_calls(path.read_text(), scripts)
    ]
    assert offenders == [], "start these by Path(sys.executable).parent / NAME"
