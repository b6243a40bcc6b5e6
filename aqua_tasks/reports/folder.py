"""The folder aqua-report writes: the table as Markdown and CSV, and its chart."""

from __future__ import annotations

from pathlib import Path

from aqua_tasks.reports.charts import VECTOR_FORMATS, plot_table
from aqua_tasks.reports.tables import ReportTable, to_csv, to_markdown


def write_report(
    table: ReportTable, out_dir: str | Path, *, chart: bool = True, vector: str = "svg"
) -> dict[str, Path]:
    """Write table.md, table.csv and (with chart) chart.png and chart.<vector>; their paths."""
    if vector not in VECTOR_FORMATS:
        raise ValueError(f"vector format must be one of {VECTOR_FORMATS}, got {vector!r}")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {"markdown": out / "table.md", "csv": out / "table.csv"}
    written["markdown"].write_text(to_markdown(table), encoding="utf-8")
    written["csv"].write_text(to_csv(table), encoding="utf-8")
    if chart:
        figure = plot_table(table)
        written["chart"] = out / "chart.png"
        figure.savefig(written["chart"], dpi=150)
        written["chart_vector"] = out / f"chart.{vector}"
        figure.savefig(written["chart_vector"])
    return written
