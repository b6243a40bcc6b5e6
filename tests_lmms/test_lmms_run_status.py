"""Real `lmms-eval` runs of ours at its default verbosity: bad settings are refused before its task
indexing (one line, exit 2), and a run that fails later exits 1, never lmms-eval's 0."""

from __future__ import annotations

import json
import os
import subprocess
from concurrent.futures import ThreadPoolExecutor

import pytest
from conftest import BIN

from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.task import METADATA_ENV

# lmms-eval logs this as it starts indexing task folders (the ~15 s the checks come before).
INDEXING = "Including path"


def _lmms_eval(metadata: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", METADATA_ENV: metadata}
    command = [str(BIN / "lmms-eval"), "--include_path", str(include_path()), *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def runs(
    released_dir, released_audio_root, tmp_path_factory
) -> dict[str, subprocess.CompletedProcess]:
    """Each bad run once, in parallel, by name."""
    tmp = tmp_path_factory.mktemp("status")
    not_a_model = tmp / "empty-model"
    not_a_model.mkdir()
    meta = json.dumps({"data_dir": str(released_dir), "audio": False})
    # An audio model's run must feed audio: text-only is refused before it starts.
    audio = json.dumps({"data_dir": str(released_dir), "audio_root": str(released_audio_root)})
    task = ["--tasks", "aqua_animal", "--limit", "2", "--output_path", str(tmp / "out")]
    cases = {
        "typo": ('{"data_dir": "x", "extractr": "official"}', "--model", "aqua-random", *task),
        "data_dir": (json.dumps({"data_dir": str(tmp / "nope")}), "--model", "aqua-random", *task),
        "model_arg": (meta, "--model", "aqua-audiolm", "--model_args", "pretrained=org/m,colour=1",
                      *task),
        "failed": (audio, "--model", "aqua-audiolm", "--model_args", f"pretrained={not_a_model}",
                   *task),
    }  # fmt: skip
    with ThreadPoolExecutor(2) as pool:
        done = pool.map(lambda case: _lmms_eval(*case), cases.values())
        return dict(zip(cases, done, strict=True))


def _line(done: subprocess.CompletedProcess) -> str:
    assert done.returncode == 2, done.stdout[-2000:] + done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert INDEXING not in done.stdout + done.stderr  # refused before lmms-eval indexed tasks
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("lmms-eval: error:")]
    return line.removeprefix("lmms-eval: error: ")


def test_bad_aqua_metadata_and_a_missing_data_folder_stop_before_task_indexing(runs, tmp_path):
    assert _line(runs["typo"]) == "AQUA_METADATA: unknown key 'extractr'; did you mean 'extractor'?"
    assert _line(runs["data_dir"]).startswith("AQUA_METADATA: data_dir '") and (
        "nope' is not a directory" in _line(runs["data_dir"])
    )


def test_an_unknown_model_argument_of_our_model_stops_before_task_indexing(runs):
    assert _line(runs["model_arg"]).startswith(
        "aqua-audiolm: unknown model argument(s) colour; accepted: batch_size,"
    )


def test_a_run_of_ours_that_fails_later_exits_one_not_zero(runs):
    done = runs["failed"]
    assert done.returncode == 1, done.stdout[-2000:] + done.stderr[-2000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith("lmms-eval: error:")]
    assert line.startswith("lmms-eval: error: the run failed (") and "exit status 1" in line


def test_a_failed_run_that_judged_with_orca_exits_one_and_other_runs_keep_lmms_evals_way(capsys):
    from types import ModuleType

    from eval_plugins.lmms_eval import compat

    evaluator, main = ModuleType("evaluator"), ModuleType("main")

    def evaluate(lm: object, task_dict: dict) -> None:
        raise RuntimeError("the judge ran out of memory")

    evaluator.evaluate = evaluate
    # prepare() finds an orca entry in a task that uses the metric, none elsewhere.
    compat._wrap_evaluate(evaluator, lambda tasks: ["orca settings"] if "judged" in tasks else [])
    main.cli_evaluate_single = lambda args: evaluator.evaluate(None, task_dict={args: None})
    compat.patch_cli(main, owns=lambda args: False)
    with pytest.raises(SystemExit) as stopped:
        main.cli_evaluate_single("judged")
    assert stopped.value.code == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "lmms-eval: error: the run failed (RuntimeError: the judge ran out of memory); exit "
        "status 1 (lmms-eval alone would exit 0)"
    )
    with pytest.raises(RuntimeError):  # not ours: lmms-eval's own handler sees it
        main.cli_evaluate_single("other")
