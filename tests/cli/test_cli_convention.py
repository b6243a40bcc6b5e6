"""One CLI convention: a `cli/<name>` module per console script, shared flags and errors."""

from __future__ import annotations

import ast
import importlib
import subprocess
import sys
from pathlib import Path

import pytest
import tomllib

from aqua_tasks.cli import audio as cli_audio
from aqua_tasks.cli import score as cli_score
from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.run_settings import check_aqua_metadata
from aqua_tasks.errors import AquaDataError
from aqua_tasks.task.definition import build_docs
from eval_plugins.cli.main import COMMANDS as AQUA_COMMANDS
from eval_plugins.lm_eval.aqua import demo
from orca_judge.cli.main import COMMANDS as ORCA_COMMANDS
from orca_judge.errors import OrcaMetricError
from orca_judge.metric.settings import resolve_settings

REPO = Path(__file__).resolve().parents[2]
PACKAGES = ("aqua_tasks", "orca_judge")
CLI_ROOMS = ("aqua_tasks.cli", "orca_judge.cli", "eval_plugins.cli")
SCRIPTS = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["scripts"]
# `aqua eval` -> "eval_plugins.cli.aqua_eval", … : every subcommand of the two commands.
SUBCOMMANDS = {
    f"{prog} {name}": module
    for prog, table in (("aqua", AQUA_COMMANDS), ("orca", ORCA_COMMANDS))
    for name, (module, _) in table.items()
}
BIN = Path(sys.executable).parent
LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"


def _modules() -> dict[str, Path]:
    """Every module of both packages, by dotted name."""
    found = {}
    for package in PACKAGES:
        for path in sorted((REPO / package).rglob("*.py")):
            parts = path.relative_to(REPO).with_suffix("").parts
            found[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return found


def _imported(path: Path) -> set[str]:
    """Modules a file imports, as absolute dotted names (relative imports resolved)."""
    package = ".".join(path.relative_to(REPO).parent.parts)
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                base = f"{package}.{base}" if base else package
            names.add(base)
            names.update(f"{base}.{alias.name}" for alias in node.names)
    return names


def _is_cli(module: str) -> bool:
    package, _, leaf = module.rpartition(".")
    return package in CLI_ROOMS and leaf != "__init__"


def test_two_commands_whose_subcommands_run_cli_modules_named_after_them():
    assert SCRIPTS == {"aqua": "eval_plugins.cli.main:main", "orca": "orca_judge.cli.main:main"}
    for command, module in SUBCOMMANDS.items():
        package, _, leaf = module.rpartition(".")
        assert package in CLI_ROOMS, module
        # aqua score -> aqua_tasks.cli.score; aqua orca-items -> aqua_tasks.cli.orca_items;
        # the harness-facing commands of the edge carry their whole name (aqua_eval).
        assert leaf in (command.split()[1].replace("-", "_"), command.replace(" ", "_")), module
        assert callable(importlib.import_module(module).main)


@pytest.mark.slow
def test_every_subcommand_answers_help_with_its_own_name():
    procs = {
        command: subprocess.Popen(
            [str(BIN / command.split()[0]), command.split()[1], "--help"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for command in SUBCOMMANDS
    }
    for command, proc in procs.items():
        out, err = proc.communicate(timeout=600)
        assert proc.returncode == 0, (command, err)
        if command == "aqua eval":  # lm-eval's own help, then what aqua eval adds
            assert "\naqua eval is lm-eval's command line (above)" in out, out[-2000:]
            continue
        assert out.startswith(f"usage: {command} "), (command, out[:200])


def test_no_cli_module_imports_another_cli_module():
    for module, path in _modules().items():
        if not _is_cli(module):
            continue
        others = {name for name in _imported(path) if _is_cli(name) and name != module}
        assert not others, f"{module} imports {sorted(others)}"


def test_no_module_outside_the_cli_rooms_imports_a_cli_module():
    for module, path in _modules().items():
        if _is_cli(module) or path.name == "__main__.py":
            continue
        assert not {name for name in _imported(path) if _is_cli(name)}, module


def test_cli_modules_report_errors_only_through_the_shared_fail_helper():
    for module, path in _modules().items():
        if not _is_cli(module):
            continue
        tree = ast.parse(path.read_text())
        functions = {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef)}
        assert "_fail" not in functions, module
        texts = [
            part.value
            for node in ast.walk(tree)
            for part in (node.values if isinstance(node, ast.JoinedStr) else [node])
            if isinstance(part, ast.Constant) and isinstance(part.value, str)
        ]
        assert not [t for t in texts if "error:" in t], module


@pytest.mark.parametrize(
    ("command", "args", "message"),
    [
        ("aqua eval", ["--model", "aqua-random", "--tasks", "aqua_animal"], "no data_dir given"),
        ("aqua score", ["{tmp}/absent"], "absent: no such file or directory"),
        ("aqua audio", ["check", "--data-dir", "{tmp}/absent"], "is not a directory"),
        ("aqua demo", ["--clips-per-class", "0"], "--clips-per-class must be at least 1"),
        ("aqua report", ["{tmp}/absent", "--no-chart"], "absent: no such file or directory"),
        ("aqua regress", ["--baseline", "{tmp}/a", "--candidate", "{tmp}/b"], "no such file"),
        # NaN passes every `<` check: refused before any run is read, naming the flag.
        (
            "aqua regress",
            ["--baseline", "{tmp}/a", "--candidate", "{tmp}/b", "--max-drop", "nan"],
            "--max-drop: expected a finite number with 0 <= --max-drop <= 100, got nan",
        ),
        (
            "aqua regress",
            ["--baseline", "{tmp}/a", "--candidate", "{tmp}/b", "--alpha", "1"],
            "--alpha: expected a finite number with 0 < --alpha < 1, got 1.0",
        ),
        ("aqua score", ["{tmp}/absent", "--n-boot", "0"], "--n-boot: expected a finite number"),
        ("aqua build", ["--input", "{tmp}/absent.json", "--output", "{tmp}/o"], "no such file"),
        ("orca train", ["--output", "{tmp}/o", "--train", "{tmp}/t.jsonl"], "no --dev file"),
        ("orca score", ["--checkpoint", "{tmp}/c", "--input", "{tmp}/i.jsonl"], "no such file"),
        ("aqua orca-items", ["{tmp}/s.jsonl", "--output", "{tmp}/o"], "no such file"),
    ],
)
def test_bad_input_is_one_prefixed_line_and_exit_two(tmp_path, command, args, message):
    assert command in SUBCOMMANDS
    prog, name = command.split()
    argv = [str(BIN / prog), name, *(a.format(tmp=tmp_path) for a in args)]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert proc.returncode == 2, proc.stderr
    lines = proc.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"{command}: error: "), proc.stderr
    assert message in lines[0]


def test_aqua_score_hides_its_progress_bar_with_no_progress(capsys):
    assert cli_score.main([str(LEGACY), "--n-boot", "20", "--json", "--no-progress"]) == 0
    # The legacy run was recorded under the old extractor name: only that notice remains.
    err = capsys.readouterr().err
    assert err.splitlines() == [
        "aqua score: recorded extractor 'mmau' 1.0 re-scored with 'aqua-rules' 3.2 (current code)"
    ]
    assert cli_score.main([str(LEGACY), "--n-boot", "20", "--json"]) == 0
    assert "scoring" in capsys.readouterr().err


def test_aqua_audio_hides_its_progress_bars_with_no_progress(tmp_path, capsys):
    data_dir, audio_root = demo.write_demo_data(tmp_path, clips_per_class=1)
    argv = ["check", "--data-dir", str(data_dir), "--audio-root", str(audio_root), "--json"]
    assert cli_audio.main([*argv, "--no-progress"]) == 0
    assert capsys.readouterr().err == ""
    assert cli_audio.main(argv) == 0
    assert "check animal" in capsys.readouterr().err


def test_exclude_defective_rejects_values_that_are_not_booleans(released_dir):
    docs = build_docs("animal", data_dir=str(released_dir), exclude_defective="yes")
    assert docs[0]["exclude_defective"] is True
    with pytest.raises(ValueError, match="exclude_defective='sometimes': expected true/false"):
        build_docs("animal", data_dir=str(released_dir), exclude_defective="sometimes")


def test_audio_setting_uses_the_one_boolean_parser(tmp_path):
    assert audio_enabled({}) is True
    assert audio_enabled({"audio": "off"}) is False
    assert audio_enabled({"audio": "Yes"}) is True
    with pytest.raises(AquaDataError, match=r"--metadata audio='maybe': expected true/false"):
        check_aqua_metadata({"data_dir": str(tmp_path), "audio": "maybe"})
    with pytest.raises(AquaDataError, match=r"--metadata exclude_defective='2'"):
        check_aqua_metadata({"data_dir": str(tmp_path), "audio": False, "exclude_defective": "2"})


def test_orca_boolean_settings_keep_naming_the_setting():
    settings = resolve_settings({"checkpoint": "c", "clamp": "off", "strict_backbone": "YES"})
    assert settings.clamp is False and settings.strict_backbone is True
    with pytest.raises(OrcaMetricError, match="orca setting 'clamp': expected true or false"):
        resolve_settings({"checkpoint": "c", "clamp": "perhaps"})


def test_write_jsonl_is_the_one_writer_iter_jsonl_reads_back(tmp_path):
    from aqua_tasks.runs import iter_jsonl
    from eval_common.jsonio import write_jsonl

    rows = [{"id": "é1", "path": tmp_path}, {"id": 2, "score": 0.5}]
    path = write_jsonl(tmp_path / "deep" / "rows.jsonl", rows)
    assert "é1" in path.read_text(encoding="utf-8")
    assert [row for _, row in iter_jsonl(path)] == [
        {"id": "é1", "path": str(tmp_path)},
        {"id": 2, "score": 0.5},
    ]


def test_a_negative_seed_and_a_drop_over_100_points_are_refused_before_any_work(capsys):
    from aqua_tasks.cli.open_judge_check import main as open_judge_check
    from aqua_tasks.cli.regress import main as regress

    with pytest.raises(SystemExit) as refused:
        open_judge_check(["--checkpoint", "x", "--data-dir", "y", "--seed", "-1"])
    assert refused.value.code == 2
    assert "argument --seed: expected an integer >= 0, got '-1'" in capsys.readouterr().err
    assert regress(["--baseline", "a", "--candidate", "b", "--max-drop", "1000"]) == 2
    assert capsys.readouterr().err.strip() == (
        "aqua regress: error: --max-drop: expected a finite number with 0 <= --max-drop <= 100, "
        "got 1000.0"
    )
