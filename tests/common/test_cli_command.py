"""The one command wrapper of every console script: Ctrl-C, a closed pipe, known errors."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from aqua_tasks.errors import (
    AquaDataError,
    AudioFileError,
    EndpointError,
    JudgeResultsError,
    ModelArgumentError,
)
from eval_common.cli import (
    EXIT_INTERRUPTED,
    EXIT_STATUSES,
    NOTHING_WRITTEN,
    RESUMES,
    command,
    run_command,
)
from eval_common.errors import EvalError, InputFileError, OutputError
from eval_plugins.cli.main import COMMANDS as AQUA_COMMANDS
from orca_judge.cli.main import COMMANDS as ORCA_COMMANDS
from orca_judge.errors import BackboneLoadError, CheckpointError, DataError, OrcaMetricError

REPO = Path(__file__).resolve().parents[2]
# `aqua eval` -> "eval_plugins.cli.aqua_eval:main", … : every subcommand of the two commands.
SCRIPTS = {
    f"{prog} {name}": f"{module}:main"
    for prog, table in (("aqua", AQUA_COMMANDS), ("orca", ORCA_COMMANDS))
    for name, (module, _) in table.items()
}
# Commands that keep their progress (journal, run folder, reply cache, files kept).
RESUMING = {"aqua eval", "aqua build", "aqua audio", "aqua demo", "aqua report", "orca train"}


def _raising(error: BaseException):
    def main(argv):
        raise error

    return main


def test_the_status_of_main_is_returned_unchanged():
    assert run_command("tool", lambda argv: 3, ["x"]) == 3


def test_ctrl_c_prints_one_line_and_exits_130(capsys):
    status = run_command("tool", _raising(KeyboardInterrupt()), on_interrupt=RESUMES)
    assert status == EXIT_INTERRUPTED == 130
    assert capsys.readouterr().err == "tool: interrupted; rerun the same command to continue\n"
    assert run_command("tool", _raising(KeyboardInterrupt())) == 130
    assert capsys.readouterr().err == "tool: interrupted; nothing was written\n"


def test_a_known_error_and_an_unreadable_input_file_print_one_line(capsys):
    class BadSetting(ValueError):
        pass

    assert run_command("tool", _raising(BadSetting("x: expected y")), errors=(BadSetting,)) == 2
    assert capsys.readouterr().err == "tool: error: x: expected y\n"
    assert run_command("tool", _raising(InputFileError("a.json:3: byte 0xff"))) == 2
    assert capsys.readouterr().err == "tool: error: a.json:3: byte 0xff\n"


@pytest.mark.parametrize(
    "error",
    [
        InputFileError("a.json:3: byte 0xff"),
        OutputError("--out x is a file; name a folder to write"),
        AquaDataError("t.json: holds no questions"),
        JudgeResultsError("orca_x.jsonl:2: not a per-item ORCA result"),
        AudioFileError("clip a.wav not found", audio_filename="a.wav"),
        ModelArgumentError("batch_size=0: expected an integer >= 1"),
        EndpointError("the server refuses every request (401)"),
        DataError("d.jsonl:4: field 'ratings' has 6"),
        CheckpointError("ckpt/orca_judge.json: missing"),
        BackboneLoadError("cannot load backbone 'b'"),
        OrcaMetricError("metric orca: no judge checkpoint"),
    ],
    ids=lambda e: type(e).__name__,
)
def test_every_error_family_ends_in_one_line_and_the_bad_input_status(error, capsys):
    # No command lists these: the wrapper catches the root and maps it to its status.
    assert ((EvalError, 2),) == EXIT_STATUSES
    assert run_command("tool", _raising(error)) == 2
    assert capsys.readouterr().err == f"tool: error: {error}\n"


def test_an_unexpected_error_still_raises():
    with pytest.raises(ZeroDivisionError):
        run_command("tool", _raising(ZeroDivisionError()))
    # A builtin error of the same kind as one of ours is not ours: a bug keeps its traceback.
    with pytest.raises(RuntimeError):
        run_command("tool", _raising(RuntimeError("unexpected")))


def test_a_broken_pipe_that_is_not_standard_output_still_raises():
    # Under pytest stdout is no pipe: a BrokenPipeError is then some connection's, not ours.
    with pytest.raises(BrokenPipeError):
        run_command("tool", _raising(BrokenPipeError()))


def test_the_decorator_keeps_the_name_and_passes_argv():
    @command("tool")
    def main(argv=None):
        """Doc."""
        return len(argv or [])

    assert main(["a", "b"]) == 2 and main.__doc__ == "Doc." and main.__wrapped__


@pytest.mark.parametrize("script", sorted(SCRIPTS))
def test_every_subcommand_runs_through_the_wrapper_with_its_interrupt_line(
    script, monkeypatch, capsys
):
    module_name, _, attr = SCRIPTS[script].partition(":")
    module = importlib.import_module(module_name)
    main = getattr(module, attr)
    assert main.__code__.co_filename.endswith("eval_common/cli.py"), script
    # Ctrl-C while the command runs: the wrapped body is replaced by one that is interrupted.
    cell = next(c for c in main.__closure__ if callable(c.cell_contents))
    monkeypatch.setattr(cell, "cell_contents", _raising(KeyboardInterrupt()))
    assert main([]) == 130
    expected = RESUMES if script in RESUMING else NOTHING_WRITTEN
    assert capsys.readouterr().err == f"{script}: interrupted; {expected}\n"
