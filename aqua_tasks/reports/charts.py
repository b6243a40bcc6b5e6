"""Charts of the paper's table and ORCA calibration pictures (matplotlib: the `plot` extra)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

from aqua_tasks.errors import PlottingUnavailable
from aqua_tasks.reports.run_metrics import ALL_TRACKS
from aqua_tasks.reports.tables import COLUMNS, Cell, ReportTable, TableRow, cell_of

if TYPE_CHECKING:
    from orca_judge.calibration import Calibration

PLOT_HINT = "pip install 'aqua-bench-eval[plot]'"
TRACK_TITLES: dict[str, str] = {
    ALL_TRACKS: "All released tracks (clips pooled; MMAU not in it)",
    "mmau": "MMAU (built by aqua build)",
}
CHART_LEGEND = (
    "Ori = Solvable accuracy (n = items); AAD / IASD / IAQD = conditional accuracy (CA) over\n"
    "the n clips whose Solvable item is right; dark inside a CA = share of all clips right on\n"
    "both (Ori × CA); whiskers = 95 % intervals (Wilson; CA: clip bootstrap)"
)
JOINT_LABEL = "Solvable and variant both right"


def _matplotlib_figure() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlottingUnavailable(f"the PNG chart needs matplotlib: {PLOT_HINT}") from None
    return Figure


BAR_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52")
# Inside each CA bar: the share of clips with both the Solvable item and the variant right.
JOINT_COLOUR = "#333333"
VECTOR_FORMATS = ("svg", "pdf")


def value_label(cell: Cell) -> str:
    """What is written above a bar: the value (one decimal below 10 %, so 0.4 is not 0) and n."""
    if math.isnan(cell.value):
        return "n/a"
    shown = f"{cell.value:.1f}" if cell.value < 10 else f"{cell.value:.0f}"
    return shown if cell.n is None else f"{shown}\nn={cell.n}"


def row_label(row: TableRow) -> str:
    """The x-axis label of a row: the model and the extractor it was scored with."""
    return f"{row.label}\n[{row.extractor}]"


def plot_table(table: ReportTable) -> Any:
    """A matplotlib Figure: one panel per track; per model Ori and the three CAs, with 95 %
    intervals, n, and (dark) the share of clips right on both the Solvable item and the
    variant, so that a model that rejects everything (CA 100 %, low Ori) cannot look best."""
    figure_class = _matplotlib_figure()
    n_rows = len(table.rows)
    fig = figure_class(
        figsize=(min(max(6.5, 1.5 + 1.1 * n_rows), 30.0), 1.2 + 3.0 * len(table.tracks)),
        layout="constrained",
    )
    axes = fig.subplots(len(table.tracks), 1, sharex=True, squeeze=False)[:, 0]
    width = 0.8 / len(COLUMNS)
    for ax, track in zip(axes, table.tracks, strict=True):
        for i, row in enumerate(table.rows):
            if track not in row.cells:
                continue  # not run on this track: nothing drawn
            ori = cell_of(row, track, "Ori").value
            for k, (name, _, _) in enumerate(COLUMNS):
                cell = cell_of(row, track, name)
                x = i + (k - (len(COLUMNS) - 1) / 2) * width
                gid = f"{track}|{row.label}|{name}"
                if not math.isnan(cell.value):
                    # CA bars are light with the both-right share dark inside; published hatched.
                    ax.bar(
                        x,
                        cell.value,
                        width,
                        color=BAR_COLOURS[k],
                        alpha=(0.45 if k else 1.0) * (0.7 if row.published else 1.0),
                        hatch="//" if row.published else None,
                        label=name if i == 0 else None,
                        gid=gid,
                    )
                    if k and not math.isnan(ori):
                        ax.bar(
                            x,
                            cell.value * ori / 100,
                            width * 0.6,
                            color=JOINT_COLOUR,
                            alpha=0.8,
                            gid=f"{gid}|joint",
                            label=JOINT_LABEL if k == len(COLUMNS) - 1 else None,
                        )
                if cell.low is not None and cell.high is not None:
                    whisker = ax.errorbar(
                        x,
                        cell.value,
                        yerr=[[cell.value - cell.low], [cell.high - cell.value]],
                        fmt="none",
                        ecolor="black",
                        elinewidth=0.8,
                        capsize=1.5,
                    )
                    whisker.lines[2][0].set_gid(f"{gid}|interval")
                top = cell.high if cell.high is not None else cell.value
                ax.text(
                    x,
                    (0 if math.isnan(top) else top) + 1.5,
                    value_label(cell),
                    ha="center",
                    va="bottom",
                    fontsize=5,
                    gid=f"{gid}|label",
                )
        ax.set_title(TRACK_TITLES.get(track, track.capitalize()), loc="left", fontsize="medium")
        ax.set_ylim(0, 118)
        ax.set_yticks(range(0, 101, 20))
        ax.set_ylabel("%")
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(
        range(n_rows), [row_label(r) for r in table.rows], rotation=30, ha="right", fontsize=7
    )
    handles, names = [], []
    for ax in axes:
        for handle, name in zip(*ax.get_legend_handles_labels(), strict=True):
            if name not in names:
                handles.append(handle)
                names.append(name)
    fig.legend(
        handles,
        names,
        loc="outside upper center",
        ncols=len(names),
        title=CHART_LEGEND
        + (
            "; hatched = published, scored by the authors' rule"
            if any(r.published for r in table.rows)
            else ""
        ),
        fontsize="small",
        title_fontsize="x-small",
    )
    return fig


def plot_calibration(cal: Calibration) -> Any:
    """Predicted expected correctness (± predicted sd) against the human mean, with y = x."""
    figure_class = _matplotlib_figure()
    fig = figure_class(figsize=(4.8, 4.6), layout="constrained")
    ax = fig.subplots()
    ax.errorbar(
        cal.predicted,
        cal.human,
        xerr=cal.spread,
        fmt="o",
        ms=3,
        alpha=0.5,
        elinewidth=0.6,
        label="item (± predicted sd)",
    )
    ax.plot([p for p, _, _ in cal.bins], [h for _, h, _ in cal.bins], "s-", label="bin mean")
    ax.plot([0, 1], [0, 1], "k--", lw=0.8, label="y = x")
    a = cal.agreement
    ax.set_title(f"ρ = {a['rho']:.3f}, τ = {a['tau']:.3f}, MAE = {a['mae_mu']:.3f}")
    ax.set_xlabel("predicted expected correctness")
    ax.set_ylabel("human mean rating (unit scale)")
    ax.set_xlim(-0.02, 1.02)
    ax.set_ylim(-0.02, 1.02)
    ax.legend(loc="upper left", fontsize="small")
    return fig
