"""The paper's table from lm-eval results of AQUA tasks."""

from __future__ import annotations

from collections.abc import Mapping

from aqua_tasks.scoring import format_table

# Main tasks are aqua_<track>; ablations aqua-<variant>_<track> (outside the 'aqua_*' glob).
TASK_PREFIXES = ("aqua_", "aqua-")
GROUP = "aqua"


def aqua_rows(results: Mapping) -> dict[str, dict[str, float]]:
    """Metrics per AQUA task (and the `aqua` group, last) from an lm-eval results dict."""
    rows: dict[str, dict[str, float]] = {}
    per_task = results.get("results", {})
    names = sorted(n for n in per_task if n.startswith(TASK_PREFIXES))
    if GROUP in per_task:
        names.append(GROUP)
    for name in names:
        rows[name] = {
            key.split(",")[0]: value
            for key, value in per_task[name].items()
            if "," in key and "_stderr," not in key and isinstance(value, (int, float))
        }
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
        "joint_* and unparsed_rate."
    )
