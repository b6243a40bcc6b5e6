"""Open-ended AQUA under lmms-eval: the same replies and the same tiny judge give the figures
plain lm-eval gives (tests/lm_eval/test_open_ended_tasks.py runs the lm-eval side alone)."""

from __future__ import annotations

import json
import math

import pytest
from conftest import BIN, lmms_eval, lmms_results, run_cli
from open_fixtures import open_judge_checkpoint

from aqua_tasks.core.open_ended import OPEN_METRICS

pytestmark = pytest.mark.shared_data
LIMIT = 24
TASKS = "aqua-open_animal,aqua-open_vocal"
MODELS = ("aqua-always-reject", "aqua-first-option")


@pytest.fixture(scope="module")
def settings(released_dir) -> dict:
    judge = open_judge_checkpoint(released_dir)
    return {
        "data_dir": str(released_dir),
        "audio": False,
        "judge": str(judge),
        "orca": {"backbone": str(judge.parent / "backbone")},
    }


@pytest.fixture(scope="module", params=MODELS)
def runs(request, tmp_path_factory, settings) -> tuple[dict, dict]:
    model = request.param
    out = tmp_path_factory.mktemp(model)
    run_cli(
        *(BIN / "lm_eval", "--model", model, "--tasks", TASKS, "--limit", LIMIT),
        *("--metadata", json.dumps(settings), "--output_path", out / "lm-eval"),
    )
    folder = run_cli(BIN / "python", "-m", "eval_plugins.lmms_eval", "--include-path").stdout
    lmms_eval(
        *("--include_path", folder.strip(), "--model", model, "--tasks", TASKS),
        *("--limit", LIMIT, "--output_path", out / "lmms-eval"),
        env={"AQUA_METADATA": json.dumps(settings)},
    )
    (lm_path,) = sorted((out / "lm-eval").rglob("results_*.json"))
    return json.loads(lm_path.read_text())["results"], lmms_results(out / "lmms-eval")["results"]


def test_lmms_eval_gives_the_open_figures_lm_eval_gives(runs):
    expected, got = runs
    for task in TASKS.split(","):
        for metric in (*OPEN_METRICS, "orca", "orca_disagreement"):
            want, have = expected[task][f"{metric},none"], got[task][f"{metric},none"]
            assert (math.isnan(want) and math.isnan(have)) or have == pytest.approx(want), (
                task,
                metric,
            )
        assert got[task]["n_items,none"] == LIMIT


def test_the_figures_are_those_of_the_baseline(runs):
    _, got = runs
    row = got["aqua-open_animal"]
    if row["abstains_iaqd,none"] == 1:  # aqua-always-reject
        assert row["acc,none"] == 0 and row["acc_iaqd,none"] == 1
    else:  # aqua-first-option
        assert row["abstains_iaqd,none"] == 0 and row["acc_iaqd_rule,none"] == 0
