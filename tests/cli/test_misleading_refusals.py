"""Refusals that named the wrong cause now say the real one (and what to pass instead)."""

from __future__ import annotations

from pathlib import Path

import pytest
from orca_fixtures import synthetic_items, write_jsonl

from aqua_tasks.cli import orca_items as cli_orca_items
from orca_judge.cli import train as cli_train

LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"
STAMP = "2026-12-01T03-08-18.454234"


@pytest.mark.parametrize("fraction", ["1.5", "1", "-0.1", "nan"])
def test_orca_train_refuses_a_heldout_fraction_outside_0_to_1_before_loading(
    tmp_path, capsys, fraction
):
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_items(8, 1, "tr"))
    code = cli_train.main(
        [
            *("--train", str(train), "--dev", str(train), "--output", str(tmp_path / "o")),
            *("--heldout-fraction", fraction),
        ]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err == (
        "orca train: error: --heldout-fraction: expected a share of the dev questions with 0 <= "
        f"--heldout-fraction < 1, got {float(fraction)!r}\n"
    )
    assert not (tmp_path / "o").exists()


def test_orca_lm_eval_items_calls_a_results_file_a_results_file_and_names_its_samples(
    tmp_path, capsys
):
    results = LEGACY / f"results_{STAMP}.json"
    code = cli_orca_items.main([str(results), "--output", str(tmp_path / "items.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "malformed JSON" not in err
    assert err == (
        f"aqua orca-items: error: {results}: is a results file, not samples; pass its "
        f"evaluation's samples file (beside it: samples_aqua_animal_{STAMP}.jsonl, "
        f"samples_aqua_music_{STAMP}.jsonl, samples_aqua_vocal_{STAMP}.jsonl) or the run folder\n"
    )
    # Renamed, a results file is still known by its content.
    renamed = tmp_path / "run-results.json"
    renamed.write_bytes(results.read_bytes())
    code = cli_orca_items.main([str(renamed), "--output", str(tmp_path / "items.jsonl")])
    assert code == 2 and "is a results file, not samples" in capsys.readouterr().err


def test_orca_lm_eval_items_takes_a_run_folder_of_one_task_and_lists_several(tmp_path, capsys):
    code = cli_orca_items.main([str(LEGACY), "--output", str(tmp_path / "items.jsonl")])
    err = capsys.readouterr().err
    assert code == 2 and "holds the samples of 3 tasks" in err and "pass one of these" in err
    one = tmp_path / "one"
    one.mkdir()
    for name in (f"results_{STAMP}.json", f"samples_aqua_animal_{STAMP}.jsonl"):
        (one / name).write_bytes((LEGACY / name).read_bytes())
    out = tmp_path / "items.jsonl"
    assert cli_orca_items.main([str(one), "--output", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 8
