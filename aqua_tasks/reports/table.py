"""The paper's table from lm-eval results of AQUA tasks, with pooled all-tracks rows."""

from __future__ import annotations

from collections.abc import Mapping

from aqua_tasks.core.pooling import MAIN_ROW, all_tracks_name, all_tracks_rows, pool_summaries
from aqua_tasks.core.scoring import format_table

# Main tasks are aqua_<track>; ablations aqua-<variant>_<track> (outside the 'aqua_*' glob).
TASK_PREFIXES = ("aqua_", "aqua-")
GROUP = MAIN_ROW
# A pooled row written by `lm_eval_results.fix_aqua_results` has its counts; lm-eval's own
# group row (a size-weighted mean of the tracks) has none.
POOLED_MARK = "n_ca_aad"


def _metrics(row: Mapping) -> dict[str, float]:
    return {
        key.split(",")[0]: value
        for key, value in row.items()
        if "," in key and "_stderr," not in key and isinstance(value, (int, float))
    }


def aqua_rows(results: Mapping) -> dict[str, dict[str, float]]:
    """Metrics per AQUA task, each setting's tracks followed by their pooled all-tracks row.

    The all-tracks row (`aqua` for the main tasks, e.g. `aqua-cot` for an ablation) is the
    one the results hold when it is pooled; lm-eval's own `aqua` group values (means of the
    tracks) are replaced by figures pooled from the tracks' rows (`pool_summaries`).
    """
    per_task = results.get("results", {})
    tasks = {
        name: _metrics(per_task[name])
        for name in sorted(per_task)
        if all_tracks_name(name) is not None
    }
    pooled_rows = all_tracks_rows(tasks)
    main = [t for t in tasks if all_tracks_name(t) == GROUP]
    if GROUP in per_task and main:
        pooled_rows.setdefault(GROUP, main)
    rows: dict[str, dict[str, float]] = {}
    for name, metrics in tasks.items():
        rows[name] = metrics
        row = next((r for r, members in pooled_rows.items() if members[-1] == name), None)
        if row is None:
            continue
        recorded = _metrics(per_task.get(row, {}))
        rows[row] = (
            recorded
            if POOLED_MARK in recorded
            else pool_summaries([tasks[m] for m in pooled_rows[row]])
        )
    return rows


def paper_table(results: Mapping) -> str | None:
    """Markdown table in the paper's layout, or None when the run has no AQUA task."""
    rows = aqua_rows(results)
    if not rows:
        return None
    return (
        format_table(rows)
        + "\n\nOri = Solvable accuracy; AAD/IASD/IAQD = conditional accuracy over the clips "
        "whose Solvable item was answered correctly (n = clips); read them with acc_*, "
        "joint_* and unparsed_rate. Rows aqua (and aqua-<setting>) pool every clip of the "
        "tracks above them: Σ correct / Σ n, not a mean of the track figures."
    )
