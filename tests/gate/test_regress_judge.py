"""aqua regress on ORCA judge scores and aqua report's calibration, from real aqua eval runs.

The runs replay rated answers through the `orca_human` task (`metric: orca`, human ratings)
and are judged by a tiny judge trained here by our own trainer.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import shutil
from pathlib import Path

import pytest
from orca_fixtures import synthetic_items, tiny_trained_checkpoint, write_jsonl

from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.gate.paired import paired_bootstrap_mean
from eval_plugins.cli import aqua_eval as cli_eval
from orca_judge.metrics import agreement

pytestmark = pytest.mark.slow
N_ITEMS = 20
REPO = Path(__file__).resolve().parents[2]


def orca_human_run(out: Path, answers: Path, items: Path, judge: Path) -> Path:
    """One run of the real aqua eval command line (in process): orca_human, replayed answers."""
    metadata = {"orca_data": str(items), "orca": {"checkpoint": str(judge)}}
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_eval.main(
            [
                *("--model", "orca-replay", "--model_args", f"path={answers}"),
                *("--tasks", "orca_human", "--metadata", json.dumps(metadata)),
                *("--output_path", str(out), "--log_samples"),
            ]
        )
    assert code == 0
    return out


def other_judge(judge: Path, dest: Path) -> Path:
    """A different checkpoint: the same judge with its head's bias moved."""
    from safetensors.torch import load_file, save_file

    shutil.copytree(judge, dest)
    head = load_file(dest / "head.safetensors")
    head["bias"] = head["bias"] + 0.5
    save_file(head, dest / "head.safetensors")
    return dest


@pytest.fixture(scope="module")
def runs(tmp_path_factory, builtin_index_parsed_once) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("judge_runs")
    judge = tiny_trained_checkpoint()
    rated = synthetic_items(N_ITEMS, 7, "h")
    items = write_jsonl(root / "rated.jsonl", rated)
    # The candidate's replies are worse: every answer becomes the lowest-rated kind.
    worse = write_jsonl(
        root / "worse.jsonl", [{**it, "candidate": "the answer is wrong"} for it in rated]
    )
    return {
        "items": items,
        "judge": judge,
        "base": orca_human_run(root / "base", items, items, judge),
        "worse": orca_human_run(root / "worse", worse, items, judge),
        "other_judge": orca_human_run(
            root / "other", items, items, other_judge(judge, root / "judge-b")
        ),
    }


def regress(capsys, base: Path, cand: Path, *args: str) -> tuple[int, str, str]:
    code = cli_regress.main(
        ["--baseline", str(base), "--candidate", str(cand), *args, "--no-progress"]
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def per_item(run: Path) -> list[dict]:
    (path,) = run.rglob("orca_orca_human_none_*.jsonl")
    return [json.loads(line) for line in path.read_text().splitlines()]


def run_results(run: Path) -> dict:
    (path,) = run.rglob("results_*.json")
    return json.loads(path.read_text())


def test_judge_score_regression_is_detected_with_exit_1(runs, capsys, tmp_path):
    summary = tmp_path / "summary.md"
    code, out, err = regress(
        capsys, runs["base"], runs["worse"], "--json", "--summary", str(summary)
    )
    assert code == 1, err
    (row,) = json.loads(out)["comparisons"]
    assert (row["task"], row["metric"], row["test"], row["n"]) == (
        "orca_human",
        "orca,none",
        "item_bootstrap",
        N_ITEMS,
    )
    # The compared values are the runs' own `orca` figures, the means of the per-item scores.
    for side in ("baseline", "candidate"):
        run = runs["base" if side == "baseline" else "worse"]
        scores = [r["orca"] for r in per_item(run)]
        assert row[side] == pytest.approx(sum(scores) / len(scores))
        assert row[side] == pytest.approx(run_results(run)["results"]["orca_human"]["orca,none"])
    assert row["delta_points"] < -1 and row["ci_high_points"] < 0
    assert row["p_holm"] < 0.05 and row["regression"] is True
    text = summary.read_text()
    assert text.startswith("## AQUA-Bench regression check: ❌ regression")
    assert "| orca_human | ORCA judge |" in text and "**REGRESSION**" in text
    assert "paired bootstrap of the mean ORCA judge score" in text
    assert "McNemar" not in text  # no AQUA task in these runs
    assert "aqua regress: REGRESSION in 1 of 1 comparisons; worst: orca_human ORCA judge" in err
    # Above a drop threshold larger than the drop, the same comparison passes.
    code, _, _ = regress(capsys, runs["base"], runs["worse"], "--max-drop", "50")
    assert code == 0


def test_repeating_an_identical_run_in_one_process_judges_and_writes_again(runs, tmp_path):
    again = orca_human_run(tmp_path / "again", runs["items"], runs["items"], runs["judge"])
    first, second = per_item(runs["base"]), per_item(again)
    assert len(second) == N_ITEMS
    assert [r["orca"] for r in second] == [r["orca"] for r in first]


def test_same_run_and_a_moved_judge_checkpoint_pass_with_exit_0(runs, capsys, tmp_path):
    code, out, err = regress(capsys, runs["base"], runs["base"], "--json")
    assert code == 0, err
    (row,) = json.loads(out)["comparisons"]
    assert row["delta_points"] == 0.0 and row["p_value"] == 1.0 and not row["regression"]
    # The same checkpoint at another path (e.g. the baseline was made on another machine):
    # identity is the judge's fingerprint, not where it was loaded from.
    moved = tmp_path / "moved"
    shutil.copytree(runs["base"], moved)
    (path,) = moved.rglob("orca_orca_human_none_*.jsonl")
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    for r in rows:
        r["judge"]["checkpoint"] = "/elsewhere/judge"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    code, _, err = regress(capsys, runs["base"], moved)
    assert code == 0, err


def test_runs_judged_by_different_checkpoints_are_refused_with_exit_2(runs, capsys, tmp_path):
    base_judge = per_item(runs["base"])[0]["judge"]
    other = per_item(runs["other_judge"])[0]["judge"]
    assert base_judge["fingerprint"] != other["fingerprint"]
    meta = run_results(runs["other_judge"])["configs"]["orca_human"]["metadata"]["orca_inputs"]
    assert meta["judge_fingerprint"] == other["fingerprint"]
    code, out, err = regress(capsys, runs["base"], runs["other_judge"])
    assert code == 2 and out == ""
    assert err.startswith("aqua regress: not comparable: orca_human: different ORCA judge ")
    assert base_judge["fingerprint"] in err and other["fingerprint"] in err
    # Judge scores in only one of the runs cannot be compared either.
    unjudged = tmp_path / "unjudged"
    shutil.copytree(runs["base"], unjudged)
    for path in unjudged.rglob("orca_*.jsonl"):
        path.unlink()
    code, _, err = regress(capsys, runs["base"], unjudged)
    assert code == 2
    assert "orca_human: ORCA judge scores (filter none) only in the baseline" in err


def test_calibration_png_and_figures_from_an_lm_eval_orca_human_run(runs, capsys, tmp_path):
    code = cli_report.main(["--orca-run", str(runs["base"]), "--out", str(tmp_path), "--json"])
    assert code == 0
    payload = json.loads(capsys.readouterr().out)
    cal = payload["orca_run"]["orca_human"]
    rows = per_item(runs["base"])
    rated = {it["id"]: it["ratings"] for it in synthetic_items(N_ITEMS, 7, "h")}
    human = [(sum(rated[r["id"]]) / len(rated[r["id"]]) - 1) / 4 for r in rows]
    predicted = [r["expected_unit"] for r in rows]
    expected = agreement(predicted, human)
    assert cal["agreement"]["n"] == N_ITEMS
    for key in ("rho", "tau", "mae_mu"):
        assert cal["agreement"][key] == pytest.approx(expected[key])
    assert cal["predicted"] == pytest.approx(predicted) and cal["human"] == pytest.approx(human)
    assert cal["spread"] == pytest.approx([math.sqrt(r["variance_unit"]) for r in rows])
    png = (tmp_path / "orca_calibration_orca_human.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 10_000
    text = (tmp_path / "orca_calibration_orca_human.md").read_text()
    assert f"rho = {expected['rho']:.3f}" in text and "task orca_human" in text
    # A run without human ratings has no calibration to draw: a clear one-line error.
    no_judge = tmp_path / "no-judge"  # a folder without ORCA results (not the --out folder)
    no_judge.mkdir()
    assert cli_report.main(["--orca-run", str(no_judge), "--out", str(tmp_path)]) == 2
    assert "no ORCA per-item results with human ratings" in capsys.readouterr().err


def test_aqua_task_with_metric_orca_is_compared_by_clip(
    tmp_path,
    capsys,
    released_dir,
    builtin_index_parsed_once,
):
    # A user's copy of our AQUA task with `- metric: orca` added to its metric_list.
    base = (REPO / "task_configs" / "_aqua_base").read_text()
    assert "\nmetadata:\n" in base
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "_aqua_judged").write_text(
        base.replace("\nmetadata:\n", "\n  - metric: orca\nmetadata:\n")
    )
    (tmp_path / "tasks" / "aqua_judged_animal.yaml").write_text(
        "include: _aqua_judged\ntask: aqua_judged_animal\n"
        "dataset_kwargs: {track: animal, variant: main, prompt: plain}\n"
    )
    meta = {"data_dir": str(released_dir), "audio": False}
    meta["orca"] = {"checkpoint": str(tiny_trained_checkpoint())}
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_eval.main(
            [
                *("--model", "aqua-always-reject", "--tasks", "aqua_judged_animal"),
                *("--include_path", str(tmp_path / "tasks"), "--limit", "48"),
                *("--metadata", json.dumps(meta), "--output_path", str(tmp_path / "run")),
                "--log_samples",
            ]
        )
    assert code == 0
    run = tmp_path / "run"
    code, out, err = regress(capsys, run, run, "--json")
    assert code == 0, err
    rows = {c["metric"]: c for c in json.loads(out)["comparisons"]}
    assert "acc" in rows and "unparsed_rate" in rows  # the AQUA metrics, as before
    judged = rows["orca,none"]
    # 48 items of 12 clips: the four items of a clip are resampled together.
    assert (judged["test"], judged["n"], judged["note"]) == ("clip_bootstrap", 48, "")
    assert judged["p_value"] == 1.0


def test_paired_bootstrap_mean_resamples_items_or_whole_clips():
    base = [0.5] * 12
    cand = [0.5 - 0.1 * (i % 2) for i in range(12)]
    by_item = paired_bootstrap_mean(base, cand, n_boot=2000, seed=1)
    assert by_item.delta == pytest.approx(-0.05)
    assert by_item.ci_low < -0.05 < by_item.ci_high < 0 and by_item.p_value < 0.01
    assert by_item == paired_bootstrap_mean(base, cand, n_boot=2000, seed=1)
    # Clips that each hold one worse and one unchanged item: every resample gives the same
    # delta; clips that hold only worse or only unchanged items: a wider interval.
    mixed = paired_bootstrap_mean(base, cand, [i // 2 for i in range(12)], n_boot=500)
    assert mixed.ci_low == pytest.approx(-0.05) and mixed.ci_high == pytest.approx(-0.05)
    split = paired_bootstrap_mean(base, cand, [i % 2 for i in range(12)], n_boot=500)
    assert split.ci_high - split.ci_low > by_item.ci_high - by_item.ci_low
    same = paired_bootstrap_mean(base, base, n_boot=200)
    assert same.delta == 0.0 and same.p_value == 1.0
    with pytest.raises(ValueError, match="finite"):
        paired_bootstrap_mean([math.nan], [0.5])


def test_a_judged_run_given_as_one_of_its_files_is_refused_naming_its_folder(runs, capsys):
    # Its judge results are named by their own time, not the evaluation's: read from one file,
    # the gate would pass the run without comparing its judge scores.
    (samples,) = runs["base"].rglob("samples_*.jsonl")
    code, _, err = regress(capsys, samples, samples)
    assert code == 2 and err.count("\n") == 1
    assert "its folder holds ORCA judge results of this run (orca_orca_human_" in err
    assert f"pass the run folder ({samples.parent}) so that its judge scores are compared" in err
