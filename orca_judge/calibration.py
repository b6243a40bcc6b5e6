"""ORCA judge calibration against human ratings: binned figures from predictions and rated items.

Inputs are `orca score --output` predictions joined with rated items (`load_calibration`), or
any predictions in the items' order (`calibration_of`; the per-item files of a `metric: orca`
run are read by `aqua_tasks.runs.judge_calibrations`). Drawing the picture is aqua report's
(`aqua_tasks.reports.charts.plot_calibration`), which owns the optional matplotlib.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from eval_common.inputs import iter_json_lines
from orca_judge.data import load_items
from orca_judge.errors import CalibrationError
from orca_judge.metrics import agreement


@dataclass(frozen=True)
class Calibration:
    """Judge predictions against human means on [0, 1], binned, with agreement figures."""

    predicted: tuple[float, ...]
    spread: tuple[float, ...]
    human: tuple[float, ...]
    bins: tuple[tuple[float, float, int], ...]
    agreement: dict[str, float]


def calibration_bins(
    predicted: Sequence[float], human: Sequence[float], n_bins: int = 5
) -> list[tuple[float, float, int]]:
    """Equal-width bins of predicted correctness: (mean predicted, mean human, count)."""
    if len(predicted) != len(human):
        raise ValueError(f"got {len(predicted)} predictions for {len(human)} human means")
    if n_bins < 1:
        raise ValueError(f"n_bins must be >= 1, got {n_bins}")
    sums: dict[int, list[float]] = {}
    for p, h in zip(predicted, human, strict=True):
        k = min(n_bins - 1, max(0, int(p * n_bins)))
        acc = sums.setdefault(k, [0.0, 0.0, 0.0])
        acc[0] += p
        acc[1] += h
        acc[2] += 1
    return [(s[0] / s[2], s[1] / s[2], int(s[2])) for _, s in sorted(sums.items())]


def calibration_of(
    rated: Sequence[Any], predicted: Sequence[float], variances: Sequence
) -> Calibration:
    """Calibration of predictions (unit scale) against rated OrcaItems, in the same order."""
    human = [float(it.human_mean_unit) for it in rated]
    has_var = all(v is not None for v in variances)
    figures = agreement(
        list(predicted),
        human,
        [float(v) for v in variances] if has_var else None,
        [float(it.human_var_unit) for it in rated],
        [len(it.ratings) for it in rated],
    )
    return Calibration(
        predicted=tuple(predicted),
        spread=tuple(math.sqrt(max(float(v), 0.0)) if has_var else 0.0 for v in variances),
        human=tuple(human),
        bins=tuple(calibration_bins(predicted, human)),
        agreement=figures,
    )


def load_calibration(predictions: str | Path, items: str | Path) -> Calibration:
    """Join `orca score --output` predictions with the rated items they were scored on."""
    pred_path = Path(predictions)
    if not pred_path.is_file():
        raise CalibrationError(f"{pred_path}: no such file")
    rows: dict[str, dict] = {}
    for line_no, row in iter_json_lines(pred_path, CalibrationError):
        try:
            rows[str(row["id"])] = row
            float(row["expected_unit"])
        except (KeyError, TypeError, ValueError):
            raise CalibrationError(
                f"{pred_path}:{line_no}: not an orca score prediction (needs id, expected_unit)"
            ) from None
    rated = [it for it in load_items(items) if it.ratings and it.id in rows]
    if len(rated) < 2:
        raise CalibrationError(
            f"{items}: fewer than 2 rated items match the predictions' ids; a calibration "
            "picture needs items with human ratings"
        )
    return calibration_of(
        rated,
        [float(rows[it.id]["expected_unit"]) for it in rated],
        [rows[it.id].get("variance_unit") for it in rated],
    )


def calibration_markdown(cal: Calibration, source: str | None = None) -> str:
    """The agreement figures and the binned calibration as Markdown (`source`: a first line)."""
    a = cal.agreement
    figures = [f"{k} = {a[k]:.3f}" for k in ("rho", "tau", "mae_mu", "mae_var") if k in a]
    lines = [f"Source: {source}", ""] if source else []
    lines += [
        f"ORCA judge vs human mean ratings (unit scale, n = {int(a['n'])}): " + ", ".join(figures),
        "",
        "| predicted (bin mean) | human mean | n |",
        "|---|---|---|",
    ]
    lines += [f"| {p:.3f} | {h:.3f} | {n} |" for p, h, n in cal.bins]
    return "\n".join(lines) + "\n"
