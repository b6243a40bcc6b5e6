"""The folder aqua report writes: the table as Markdown and CSV, its chart, judge calibrations.

Every file goes through the project's one writer (`eval_common.outputs`): written whole or
not at all, and only the names below; anything else in the folder is left alone.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from aqua_tasks.reports.charts import VECTOR_FORMATS, plot_table
from aqua_tasks.reports.tables import ReportTable, to_csv, to_markdown
from eval_common.outputs import atomic_path, write_text

# The names aqua report writes: a folder holding only these is its own output.
REPORT_NAMES = ("table.md", "table.csv", "chart.*", "orca_calibration*", "open_ended.md")


def save_figure(figure: Any, path: Path, **options: Any) -> Path:
    """Save a matplotlib figure to `path` atomically (its format from the suffix)."""
    with atomic_path(path) as tmp:
        figure.savefig(tmp, format=path.suffix.lstrip("."), **options)
    return path


def write_report(
    table: ReportTable, out_dir: str | Path, *, chart: bool = True, vector: str = "svg"
) -> dict[str, Path]:
    """Write table.md, table.csv and (with chart) chart.png and chart.<vector>; their paths."""
    if vector not in VECTOR_FORMATS:
        raise ValueError(f"vector format must be one of {VECTOR_FORMATS}, got {vector!r}")
    out = Path(out_dir)
    written = {"markdown": out / "table.md", "csv": out / "table.csv"}
    write_text(written["markdown"], to_markdown(table))
    write_text(written["csv"], to_csv(table))
    if chart:
        figure = plot_table(table)
        written["chart"] = save_figure(figure, out / "chart.png", dpi=150)
        written["chart_vector"] = save_figure(figure, out / f"chart.{vector}")
    return written
