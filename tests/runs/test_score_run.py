"""The one scoring pipeline: `score_run` → `RunScores`, its JSON form, and who goes through it.

The run scored is `tests/data/legacy_run_0_1_0` (`aqua-first-option`, 8 items per track): of
its six Solvable items only vocal's first is right, so the pooled Ori is 1 / 6.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.intervals import metric_stderrs
from aqua_tasks.core.scoring import ItemOutcome, summarize
from aqua_tasks.errors import RunError
from aqua_tasks.reports.run_metrics import load_run_metrics
from aqua_tasks.runs import (
    RunScores,
    ScoreSettings,
    is_run_scores,
    read_run,
    row_figures,
    score_run,
)
from eval_plugins.lm_eval.aqua.results import fix_aqua_results

LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"
TASKS = ["aqua_animal", "aqua_music", "aqua_vocal"]


def nan_equal(a: dict, b: dict) -> bool:
    """Equal figures, NaN equal to NaN."""
    return a.keys() == b.keys() and all(
        (math.isnan(a[k]) and math.isnan(b[k])) or a[k] == b[k] for k in a
    )


@pytest.fixture(scope="module")
def legacy_run():
    return read_run(LEGACY)


def test_score_run_is_exactly_what_aqua_score_json_prints(legacy_run, capsys):
    scores = score_run(legacy_run, ScoreSettings(n_boot=200, seed=4))
    assert aqua_score([str(LEGACY), "--json", "--n-boot", "200", "--seed", "4"]) == 0
    printed = capsys.readouterr().out
    assert printed == json.dumps(scores.to_json(), indent=2) + "\n"
    assert list(scores.results) == [*TASKS, "aqua"]
    assert scores.pooled == {"aqua": TASKS}
    assert scores.results["aqua"]["acc"] == pytest.approx(1 / 6)
    assert scores.results["aqua"]["n_solvable"] == 6
    assert scores.results["aqua_vocal"]["acc"] == 0.5
    assert math.isnan(scores.results["aqua_animal"]["ca_aad"])  # no clip to condition on
    # A pooled row reads from its tracks' files; the JSON says so.
    assert [s.task for s in scores.sources["aqua"]] == TASKS
    payload = json.loads(printed)
    assert payload["intervals"]["seed"] == 4 and payload["intervals"]["n_boot"] == 200
    assert payload["results"]["aqua_animal"]["ca_aad"] is None
    assert is_run_scores(payload) and not is_run_scores({"results": {}})
    # The recorded extractor is the old name of the current one: re-scored, and said so.
    assert scores.rescoring == (
        "recorded extractor 'mmau' 1.0 re-scored with 'aqua-rules' 3.2 (current code)",
    )


def test_the_json_form_reads_back_to_the_same_scores(legacy_run):
    settings = ScoreSettings(
        condition_on=legacy_run, breakdown="class", exclude_defective=True, n_boot=50
    )
    scores = score_run(legacy_run, settings)
    payload = scores.to_json()
    assert payload["conditioned_on"] == str(LEGACY)
    assert set(payload["breakdown"]) == set(TASKS)
    back = RunScores.from_json(json.loads(json.dumps(payload)))
    assert back.to_json() == payload
    assert back.breakdown == "class" and back.pooled == scores.pooled
    assert back.sources == scores.sources
    assert back.intervals["aqua"] == scores.intervals["aqua"]
    for row, figures in scores.results.items():
        assert nan_equal(back.results[row], figures), row
    # The per-item verdicts are not part of the JSON form.
    assert back.tasks == {} and len(scores.item_rows()) == 24


def test_per_item_rows_are_those_aqua_score_writes(legacy_run, tmp_path):
    rows = tmp_path / "items.jsonl"
    assert aqua_score([str(LEGACY), "--per-item", str(rows), "--no-progress", "--n-boot", "5"]) == 0
    written = [json.loads(line) for line in rows.read_text().splitlines()]
    assert written == score_run(legacy_run, ScoreSettings(n_boot=5)).item_rows()
    assert written[0]["task"] == "aqua_animal" and "manifest" in written[0]


def test_conditioning_on_a_run_without_a_track_names_it(legacy_run):
    animal_only = read_run(next(LEGACY.glob("samples_aqua_animal_*.jsonl")))
    with pytest.raises(RunError, match=r"has no music Solvable items"):
        score_run(legacy_run, ScoreSettings(condition_on=animal_only))


def test_settings_refuse_an_unknown_breakdown_or_no_resamples():
    with pytest.raises(ValueError, match="breakdown must be one of"):
        ScoreSettings(breakdown="track")
    with pytest.raises(ValueError, match="n_boot must be >= 1"):
        ScoreSettings(n_boot=0)


def test_the_report_reads_the_same_figures_from_the_run_and_from_its_aqua_score_json(
    legacy_run, tmp_path
):
    scores = score_run(legacy_run, ScoreSettings(n_boot=100, released_only=True))
    saved = tmp_path / "scores.json"
    saved.write_text(json.dumps(score_run(legacy_run, ScoreSettings(n_boot=100)).to_json()))
    from_run = load_run_metrics(LEGACY, n_boot=100)
    from_json = load_run_metrics(saved)
    for row, figures in scores.results.items():
        assert nan_equal(from_run.tasks[row], figures), row
        assert nan_equal(from_json.tasks[row], figures), row
    assert from_run.intervals == scores.intervals
    assert from_json.intervals["aqua"]["acc"] == scores.intervals["aqua"]["acc"]
    assert "ca_aad" not in from_json.intervals["aqua_animal"]  # undefined: left out
    assert from_json.harness == "aqua score --json of lm-eval"


def _outcomes(task_clips: list[tuple[str, str, bool]]) -> list[ItemOutcome]:
    return [ItemOutcome(clip, kind, right, True, False) for clip, kind, right in task_clips]


def test_row_figures_pool_clips_of_each_task_apart():
    # Both tasks name a clip "c1": pooled, each AAD pairs with its own task's Solvable item.
    values = {
        "aqua_animal": _outcomes([("c1", "Solvable", True), ("c1", "AAD", True)]),
        "aqua_music": _outcomes(
            [
                ("c1", "Solvable", False),
                ("c2", "Solvable", True),
                ("c3", "Solvable", False),
                ("c1", "AAD", True),
                ("c2", "AAD", False),
            ]
        ),
    }
    figures, spreads = row_figures(values, {"aqua": ["aqua_animal", "aqua_music"]}, spread=None)
    assert spreads == {}
    assert figures["aqua"]["acc"] == 0.5  # 2 of 4 Solvable items, not the mean 2/3
    assert figures["aqua"]["ca_aad"] == 0.5 and figures["aqua"]["n_ca_aad"] == 2
    assert figures["aqua_music"] == summarize(values["aqua_music"])
    _, stderrs = row_figures(values, {}, spread=metric_stderrs, n_boot=20)
    assert set(stderrs) == {"aqua_animal", "aqua_music"}
    assert stderrs["aqua_music"]["acc"] == pytest.approx(
        metric_stderrs(values["aqua_music"])["acc"]
    )


def test_the_results_step_writes_the_figures_of_the_pipeline():
    values = {
        "aqua_animal": _outcomes([("a", "Solvable", True), ("a", "IAQD", True)]),
        "aqua_music": _outcomes([("m", "Solvable", False), ("m", "IAQD", True)]),
    }
    results = {"results": {t: {"alias": t, "sample_len": 2} for t in values}}
    fixed = fix_aqua_results(results, {t: {"none": v} for t, v in values.items()}, n_boot=0)
    figures, _ = row_figures(values, {"aqua": list(values)}, spread=None)
    for row in ("aqua_animal", "aqua_music", "aqua"):
        written = {m: float(fixed["results"][row][f"{m},none"]) for m in figures[row]}
        assert nan_equal(written, figures[row]), row
    assert fixed["results"]["aqua"]["ca_iaqd,none"] == 1.0
    assert fixed["results"]["aqua"]["n_ca_iaqd,none"] == 1
