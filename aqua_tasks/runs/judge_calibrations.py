"""ORCA calibrations of a saved run: one per task and filter whose per-item judge results carry
human ratings (`orca_<task>_<filter>_*.jsonl`, found by the run reader)."""

from __future__ import annotations

from pathlib import Path

from aqua_tasks.runs.judge_results import find_judge_results
from orca_judge.calibration import Calibration, calibration_of
from orca_judge.data import load_items
from orca_judge.errors import CalibrationError, DataError


def load_run_calibrations(run: str | Path) -> dict[str, Calibration]:
    """Calibrations from an lm-eval run with `metric: orca` over docs with human ratings.

    One per task and filter whose per-item judge results (`orca_<task>_<filter>_*.jsonl`,
    written beside the samples; the newest counts) carry ratings, e.g. the `orca_human` task
    (`ratings_field: ratings`). Keyed `<task>` (filter `none`) or `<task>_<filter>`. The
    per-item rows hold the judge's inputs, ratings included, so no items file is needed.
    """
    run = Path(run)
    if not run.exists():
        raise CalibrationError(f"{run}: no such file or directory")
    found = find_judge_results(run)
    out: dict[str, Calibration] = {}
    for (task, filter_name), results in found.items():
        rated_rows = {k: r for k, r in results.by_key().items() if r["inputs"].get("ratings")}
        if len(rated_rows) < 2:
            continue
        try:
            rated = load_items([{**r["inputs"], "id": k} for k, r in rated_rows.items()])
        except DataError as error:
            raise CalibrationError(f"{results.path}: {error}") from None
        rows = list(rated_rows.values())
        name = task if filter_name == "none" else f"{task}_{filter_name}"
        out[name] = calibration_of(
            rated,
            [float(r["expected_unit"]) for r in rows],
            [r.get("variance_unit") for r in rows],
        )
    if not out:
        raise CalibrationError(
            f"{run}: no ORCA per-item results with human ratings (orca_*.jsonl from a run with "
            "`metric: orca` and `ratings_field:`, e.g. the orca_human task via aqua eval "
            "--output_path)"
        )
    return out
