"""Every numeric flag of every command is finite and in range, refused in one line naming it."""

from __future__ import annotations

import pytest

from aqua_tasks.cli import build as cli_build
from aqua_tasks.cli import open_judge_check as cli_open_check
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli import score as cli_score
from orca_judge.cli import score as cli_orca_score
from orca_judge.cli import synthesize as cli_synthesize
from orca_judge.cli import train as cli_train

TRAIN = ["--output", "{tmp}/o", "--train", "{tmp}/t.jsonl", "--dev", "{tmp}/d.jsonl"]
ORCA_SCORE = ["--checkpoint", "{tmp}/c", "--input", "{tmp}/i.jsonl"]
BUILD = ["--input", "{tmp}/a.json", "--output", "{tmp}/o", "--name", "x.json"]
REGRESS = ["--baseline", "{tmp}/a", "--candidate", "{tmp}/b"]
OPEN_CHECK = ["--checkpoint", "{tmp}/c", "--data-dir", "{tmp}/d"]
# (command module, argv, the one line expected after "<prog>: error: ")
CASES = [
    # --seed of every command: argparse's own line (its type takes integers >= 0 only).
    (cli_score, ["{tmp}/r", "--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (cli_report, ["{tmp}/r", "--seed", "-1"], "argument --seed: expected an integer >= 0"),
    (cli_regress, [*REGRESS, "--seed", "-3"], "argument --seed: expected an integer >= 0"),
    (cli_synthesize, ["{tmp}/s.jsonl", "--output", "{tmp}/o.jsonl", "--seed", "-1"], "--seed:"),
    (cli_build, [*BUILD, "--max-attempts", "0"], "1 <= --max-attempts, got 0"),
    (cli_build, [*BUILD, "--iasd-options", "1"], "2 <= --iasd-options, got 1"),
    (cli_build, [*BUILD, "--seed", "-1"], "argument --seed: expected an integer >= 0, got '-1'"),
    (cli_orca_score, [*ORCA_SCORE, "--clamp-threshold", "inf"], "--clamp-threshold, got inf"),
    (cli_orca_score, [*ORCA_SCORE, "--clamp-threshold", "nan"], "--clamp-threshold, got nan"),
    (cli_orca_score, [*ORCA_SCORE, "--batch-size", "0"], "1 <= --batch-size, got 0"),
    (cli_orca_score, [*ORCA_SCORE, "--max-tokens", "-5"], "1 <= --max-tokens, got -5"),
    # Every OrcaConfig field is a flag; NaN and infinity reached training before.
    (cli_train, [*TRAIN, "--lr", "nan"], "--lr: expected a finite number with 0 < --lr, got nan"),
    (cli_train, [*TRAIN, "--lr", "0"], "0 < --lr, got 0.0"),
    (cli_train, [*TRAIN, "--grad-clip", "inf"], "0 <= --grad-clip, got inf"),
    (cli_train, [*TRAIN, "--lora-dropout", "1.5"], "0 <= --lora-dropout <= 1, got 1.5"),
    (cli_train, [*TRAIN, "--clamp-threshold", "-1"], "0 <= --clamp-threshold, got -1.0"),
    (cli_train, [*TRAIN, "--max-steps", "0"], "1 <= --max-steps, got 0"),
    (cli_train, [*TRAIN, "--seed", "-1"], "0 <= --seed, got -1"),
    (cli_train, [*TRAIN, "--keep-evaluations", "-1"], "0 <= --keep-evaluations, got -1"),
    (cli_train, [*TRAIN, "--split-seed", "-1"], "0 <= --split-seed, got -1"),
    # 1.5 used to say "dev set is empty"; 1 would hold out every dev question.
    (cli_train, [*TRAIN, "--heldout-fraction", "1.5"], "0 <= --heldout-fraction < 1, got 1.5"),
    (cli_train, [*TRAIN, "--heldout-fraction", "1"], "0 <= --heldout-fraction < 1, got 1.0"),
    (cli_train, [*TRAIN, "--heldout-fraction", "nan"], "--heldout-fraction < 1, got nan"),
    # A share of wrong verdicts: NaN or a negative one made every judge "NOT fit".
    (cli_open_check, [*OPEN_CHECK, "--tolerance", "nan"], "0 <= --tolerance <= 1, got nan"),
    (cli_open_check, [*OPEN_CHECK, "--tolerance", "-1"], "0 <= --tolerance <= 1, got -1.0"),
]


@pytest.mark.parametrize(
    ("cli", "argv", "message"),
    CASES,
    ids=[f"{c.PROG} {' '.join(a[-2:])}" for c, a, _ in CASES],
)
def test_a_numeric_flag_out_of_range_is_one_line_naming_it(tmp_path, capsys, cli, argv, message):
    if cli is cli_train:
        argv = [*argv, "--backbone", str(tmp_path / "b")]
    try:
        code = cli.main([a.format(tmp=tmp_path) for a in argv])
    except SystemExit as stop:  # argparse's refusal of a flag's type
        code = stop.code
    assert code == 2
    err = capsys.readouterr().err
    line = err.splitlines()[-1]  # argparse prints its usage first
    assert line.startswith(f"{cli.PROG}: error: "), err
    assert len(err.splitlines()) == 1 or "argument --" in line, err
    assert message in err
