"""Plain `lm_eval` with the package installed: AQUA tasks, our models and a bare `metric: orca`.

The start-up hook (`eval_plugins.startup_hook`, installed as a `.pth` file) is checked in real
processes: the editable install of this environment and a wheel installed into a throwaway
environment and removed again.
"""

from __future__ import annotations

import json
import logging
import os
import re
import shutil
import subprocess
import sys
import zipfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from orca_fixtures import tiny_trained_checkpoint, write_jsonl

from eval_plugins.lm_eval.aqua.task_folder import task_config_dir, with_task_folder
from eval_plugins.startup_hook import ENV_SWITCH, TRIGGERS, LmEvalImportHook, enabled

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
REPO = Path(__file__).resolve().parents[2]
HOOK_FILE = "aqua_bench_eval_lm_eval_hook.pth"
HOOK_OFF = "start-up hook is off"
LIMIT = 4
OPTIONS = ["a cough", "the sun"]

USER_TASK = """\
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "{prompt}"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 16
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
  - metric: orca
    checkpoint: {checkpoint}{extra}
metadata:
  version: 1.0
"""


def run(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    full_env.pop(ENV_SWITCH, None)  # the hook as a user has it
    full_env.update(env or {})
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=full_env
    )


def results_of(folder: Path) -> dict:
    (path,) = sorted(folder.rglob("results_*.json"))
    return json.loads(path.read_text())


def rows_of(folder: Path, prefix: str) -> list[dict]:
    (path,) = sorted(folder.rglob(f"{prefix}_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


@pytest.fixture(scope="module")
def user_tasks(tmp_path_factory) -> Path:
    """A user's own folder: two generate_until tasks with a bare `- metric: orca` entry."""
    root = tmp_path_factory.mktemp("user_tasks")
    checkpoint = tiny_trained_checkpoint()
    named = write_jsonl(
        root / "named.jsonl",
        [
            {"id": f"n{i}", "q": f"What is the bird singing {i}?", "answer": "the sun",
             "options": OPTIONS}
            for i in range(3)
        ],
    )  # fmt: skip
    bare = write_jsonl(
        root / "bare.jsonl",
        [{"id": f"b{i}", "answer": "the sun", "options": OPTIONS} for i in range(3)],
    )
    (root / "my_qa_named.yaml").write_text(
        USER_TASK.format(
            name="my_qa_named",
            data=named,
            prompt="Q: {{q}}\\nA:",
            checkpoint=checkpoint,
            extra="\n    question_field: q",
        )
    )
    (root / "my_qa_prompt.yaml").write_text(
        USER_TASK.format(
            name="my_qa_prompt",
            data=bare,
            prompt="What is the bird singing ({{id}})?",
            checkpoint=checkpoint,
            extra="",
        )
    )
    return root


@pytest.fixture(scope="module")
def cli_runs(user_tasks, released_dir, tmp_path_factory) -> dict[str, tuple]:
    """The same run through plain `lm_eval` and through `aqua eval`, started together."""
    out = tmp_path_factory.mktemp("plain_runs")
    args = [
        "--model", "aqua-always-reject",
        "--tasks", "aqua_*,my_qa_named,my_qa_prompt",
        "--include_path", user_tasks,
        "--limit", LIMIT,
        "--metadata", json.dumps({"data_dir": str(released_dir), "audio": False}),
        "--log_samples",
    ]  # fmt: skip
    commands = {
        "plain": [BIN / "lm_eval", *args, "--output_path", out / "plain"],
        "aqua": [BIN / "aqua", "eval", *args, "--output_path", out / "aqua"],
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {name: pool.submit(run, *cmd) for name, cmd in commands.items()}
        return {name: (f.result(), out / name) for name, f in futures.items()}


def test_plain_lm_eval_gives_aqua_eval_numbers_for_aqua_tasks_and_a_users_orca_task(cli_runs):
    (plain, plain_out), (aqua, aqua_out) = cli_runs["plain"], cli_runs["aqua"]
    assert plain.returncode == 0, plain.stderr[-4000:]
    assert aqua.returncode == 0, aqua.stderr[-4000:]
    plain_results, aqua_results = results_of(plain_out), results_of(aqua_out)
    tasks = {"aqua_animal", "aqua_music", "aqua_vocal", "my_qa_named", "my_qa_prompt"}
    # `aqua`: the all-tracks row, pooled over clips, added after lm-eval's aggregation.
    assert set(plain_results["results"]) == tasks | {"aqua"}
    tasks |= {"aqua"}
    for task in tasks:
        assert plain_results["results"][task] == pytest.approx(
            aqua_results["results"][task], nan_ok=True
        ), task
    assert plain_results["results"]["aqua_animal"]["n_items,none"] == LIMIT
    assert plain_results["config"]["model"] == "aqua-always-reject"
    assert plain_results["configs"]["aqua_music"]["metadata"]["audio"] is False
    for proc in (plain, aqua):
        # A subtask of the added `aqua` row prints as "| - aqua_animal"; no hook warning.
        assert re.search(r"^\|[ -]*aqua_animal", proc.stdout, re.M)
        assert HOOK_OFF not in proc.stderr
    # aqua eval adds the paper-layout table after lm-eval's own; plain lm_eval prints its own.
    assert aqua.stdout.count("AQUA-Bench (paper layout, %)") == 1
    assert "AQUA-Bench (paper layout" not in plain.stdout


def test_bare_orca_entry_under_plain_lm_eval_judges_with_the_question(cli_runs):
    plain, out = cli_runs["plain"]
    assert plain.returncode == 0, plain.stderr[-4000:]
    results = results_of(out)
    # Per-item judge results are written beside lm-eval's samples, as under aqua eval.
    named = rows_of(out, "orca_my_qa_named_none")
    assert [r["inputs"]["question"] for r in named] == [
        f"What is the bird singing {i}?" for i in range(3)
    ]
    assert {r["inputs"]["question_from"] for r in named} == {"doc.q"}
    prompt = rows_of(out, "orca_my_qa_prompt_none")
    assert [r["inputs"]["question"] for r in prompt] == [
        f"What is the bird singing (b{i})?" for i in range(3)
    ]
    assert {r["inputs"]["question_from"] for r in prompt} == {"doc_to_text"}
    for rows, task in ((named, "my_qa_named"), (prompt, "my_qa_prompt")):
        assert all(r["seen"][0] == "question" for r in rows)
        assert [r["inputs"]["candidate"] for r in rows] == ["(b) the sun"] * 3
        got = results["results"][task]
        assert got["orca_with_question,none"] == 1.0
        assert got["orca,none"] == pytest.approx(sum(r["orca"] for r in rows) / 3, abs=1e-6)
    configs = results["configs"]
    assert configs["my_qa_named"]["metadata"]["orca_inputs"]["question"] == "doc.q"
    assert configs["my_qa_prompt"]["metadata"]["orca_inputs"]["question"] == (
        "doc.question if present, else doc_to_text"
    )


def test_task_folder_goes_before_a_users_include_path_once():
    ours = str(task_config_dir())
    assert with_task_folder(None) == [ours]
    assert with_task_folder("my_tasks") == [ours, "my_tasks"]
    assert with_task_folder(["a", "b"]) == [ours, "a", "b"]
    assert with_task_folder([ours, "a"]) == [ours, "a"]  # aqua eval names it already
    assert with_task_folder("a", include_defaults=False) == "a"  # only the caller's folders


def test_hook_switch_reads_the_environment_variable():
    assert enabled({}) and enabled({ENV_SWITCH: "1"})
    assert not any(enabled({ENV_SWITCH: v}) for v in ("0", "false", "OFF", " no "))


def test_a_failing_hook_warns_once_and_never_breaks_the_import(tmp_path, monkeypatch, caplog):
    for name in ("hook_probe_a", "hook_probe_b"):
        (tmp_path / f"{name}.py").write_text("VALUE = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    hook = LmEvalImportHook()
    hook.pending = {"hook_probe_a": "no_such_action", "hook_probe_b": "no_such_action"}
    sys.meta_path.insert(0, hook)
    try:
        with caplog.at_level(logging.WARNING, logger="eval_plugins.startup_hook"):
            import hook_probe_a  # noqa: F401  (the import under test)
            import hook_probe_b
    finally:
        hook.remove()
        for name in ("hook_probe_a", "hook_probe_b"):
            sys.modules.pop(name, None)
    assert hook_probe_b.VALUE == 42
    warnings = [r for r in caplog.records if HOOK_OFF in r.getMessage()]
    assert len(warnings) == 1 and "no_such_action" in warnings[0].getMessage()
    assert hook not in sys.meta_path and not hook.pending


WHEEL_PROBE = """
import json, sys, aqua_tasks, lm_eval.evaluator
from lm_eval.api.registry import get_model, metric_registry
from lm_eval.tasks import TaskManager
from eval_plugins.names import LM_EVAL, load, targets
print(json.dumps({
    "package": aqua_tasks.__file__,
    "ours": all(get_model(name) is load(t) for name, t in targets(LM_EVAL, "models").items())
        and get_model("orca-replay").__name__ == "OrcaReplayLM" and "orca" in metric_registry,
    "lm_eval_own": [get_model("dummy").__name__, get_model("hf").__name__],
    "patched": hasattr(TaskManager.__init__, "_indexes_aqua_tasks"),
}))
"""

HOOKS_PROBE = (
    "import json, sys; "
    "print(json.dumps([type(f).__name__ for f in sys.meta_path if 'Hook' in type(f).__name__]))"
)


def test_unsupported_lm_eval_version_is_a_no_op_with_one_warning(monkeypatch, caplog):
    import lm_eval
    from lm_eval.tasks import manager

    from eval_plugins.lm_eval import plugin as lm_eval_plugin

    called = []
    monkeypatch.setattr(lm_eval, "__version__", "0.6.0")
    for action in TRIGGERS.values():
        monkeypatch.setattr(lm_eval_plugin, action, called.append)
    hook = LmEvalImportHook()
    with caplog.at_level(logging.WARNING, logger="eval_plugins.startup_hook"):
        for name in TRIGGERS:
            hook.fire(name, manager)
    assert called == [] and not hook.pending
    (warning,) = [r.getMessage() for r in caplog.records if HOOK_OFF in r.getMessage()]
    assert (
        "lm-eval 0.6.0 is not a version this package supports (>=0.4.13,<0.6, tested with 0.4.13)"
        in warning
    )


def _copy_project(target: Path) -> Path:
    target.mkdir()
    for name in ("pyproject.toml", "setup.py", "setup.cfg", "README.md"):
        shutil.copy2(REPO / name, target / name)
    for name in (
        "aqua_tasks",
        "orca_judge",
        "eval_common",
        "eval_plugins",
        "task_configs",
        "lmms_task_configs",
    ):
        shutil.copytree(REPO / name, target / name, ignore=shutil.ignore_patterns("__pycache__"))
    return target


def test_wheel_install_carries_the_hook_and_uninstall_removes_it(tmp_path):
    project = _copy_project(tmp_path / "project")
    pip = [sys.executable, "-m", "pip"]
    built = run(*pip, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", tmp_path, project)
    assert built.returncode == 0, built.stderr[-3000:]
    (wheel,) = tmp_path.glob("aqua_bench_eval-*.whl")
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        assert archive.read(HOOK_FILE).decode() == (
            "import eval_plugins.startup_hook as hook; hook.install()\n"
        )
        record = next(n for n in names if n.endswith(".dist-info/RECORD"))
        assert HOOK_FILE in archive.read(record).decode()
    assert "eval_plugins/startup_hook.py" in names
    # lmms-eval's task YAMLs ship beside lm-eval's, in a folder lm-eval does not index.
    assert {
        "aqua_tasks/lmms_task_configs/_aqua_base",
        "aqua_tasks/lmms_task_configs/aqua_animal.yaml",
    } <= set(names)

    # A throwaway environment that sees this one's dependencies (a plain path entry: none of
    # this environment's .pth files, so not its editable aqua_tasks) and gets the wheel.
    venv = tmp_path / "venv"
    made = run(sys.executable, "-m", "venv", "--without-pip", venv)
    assert made.returncode == 0, made.stderr
    python = venv / "bin" / "python"
    site = Path(run(python, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))")
                .stdout.strip())  # fmt: skip
    deps = Path(next(p for p in sys.path if p.endswith("site-packages")))
    (site / "deps.pth").write_text(f"{deps}\n")
    target = ["--python", python]
    installed = run(*pip, *target, "install", "--no-deps", "--no-index", "-q", wheel)
    assert installed.returncode == 0, installed.stderr[-3000:]
    assert (site / HOOK_FILE).is_file()

    # -P: not this checkout's folder first on sys.path (the hook no longer imports aqua_tasks
    # at start-up, so the working folder's copy would be the one found).
    probe = run(python, "-P", "-c", WHEEL_PROBE)
    assert probe.returncode == 0, probe.stderr[-3000:]
    found = json.loads(probe.stdout.splitlines()[-1])
    assert Path(found["package"]).is_relative_to(venv)
    assert found["ours"] and found["patched"]
    assert found["lm_eval_own"] == ["DummyLM", "HFLM"]  # registered after lm-eval's own
    assert HOOK_OFF not in probe.stderr

    removed = run(*pip, *target, "uninstall", "-y", "-q", "aqua-bench-eval")
    assert removed.returncode == 0, removed.stderr[-3000:]
    assert not (site / HOOK_FILE).exists()
    after = run(python, "-c", HOOKS_PROBE)
    assert after.returncode == 0 and after.stderr == ""
    assert json.loads(after.stdout) == []
