"""Paper-layout tables and charts from AQUA runs; ORCA calibration pictures.

Plotting needs the optional `plot` extra (matplotlib); everything else does not.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from aqua_tasks.data import TASK_NAME_PREFIXES
from aqua_tasks.docs import audio_enabled
from aqua_tasks.results_table import GROUP, aqua_rows
from aqua_tasks.runs import NAME_ARGS as NAME_ARGS  # moved to runs; importable from here
from aqua_tasks.runs import RESULTS_NAME as RESULTS_NAME
from aqua_tasks.runs import RunError, RunFiles, find_outputs, run_label
from aqua_tasks.runs import read_json as read_run_json

PLOT_HINT = "pip install 'aqua-bench-eval[plot]'"
# Paper column order; MMAU is published but not released.
TRACK_ORDER: tuple[str, ...] = ("animal", "vocal", "music", "mmau")
TRACK_SHORT: dict[str, str] = {"animal": "An", "vocal": "Vo", "music": "Mu", "mmau": "MMAU"}
# (column name, metric giving the value, metric giving n)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Ori", "acc", "n_solvable"),
    ("AAD", "ca_aad", "n_ca_aad"),
    ("IASD", "ca_iasd", "n_ca_iasd"),
    ("IAQD", "ca_iaqd", "n_ca_iaqd"),
)
UNPARSED = ("unparsed", "unparsed_rate", "n_items")
PUBLISHED_SOURCE = "Kuan & Lee, ICASSP 2026 (arXiv 2601.12248), Table 1"
# Table 1 of the paper, % (Ori, AAD CA, IASD CA, IAQD CA) per track; † = chain-of-thought.
PUBLISHED_TABLE1: dict[str, dict[str, tuple[float, float, float, float]]] = {
    "Qwen2-Audio": {
        "animal": (91.9, 23.6, 78.0, 25.7),
        "vocal": (91.1, 14.0, 55.2, 25.6),
        "music": (78.1, 19.2, 64.4, 24.9),
        "mmau": (63.1, 39.5, 63.8, 42.9),
    },
    "Qwen2.5-Omni": {
        "animal": (96.4, 20.5, 83.6, 86.5),
        "vocal": (92.2, 7.2, 87.1, 86.8),
        "music": (83.1, 22.1, 78.3, 84.0),
        "mmau": (75.4, 28.3, 77.3, 90.8),
    },
    "Audio Flamingo 3": {
        "animal": (77.5, 0.7, 0.4, 0.7),
        "vocal": (84.4, 0.0, 3.0, 1.6),
        "music": (58.1, 0.5, 0.0, 0.5),
        "mmau": (79.3, 48.5, 42.8, 9.8),
    },
    "BALSa-MA": {
        "animal": (96.4, 74.9, 90.2, 79.5),
        "vocal": (74.7, 28.6, 97.4, 84.0),
        "music": (40.6, 39.7, 85.6, 80.8),
        "mmau": (64.6, 70.7, 55.8, 89.8),
    },
    "Qwen2.5-Omni†": {
        "animal": (96.4, 59.1, 91.6, 89.6),
        "vocal": (92.2, 51.8, 94.0, 91.6),
        "music": (83.1, 76.6, 90.6, 95.3),
        "mmau": (75.4, 59.3, 80.7, 94.7),
    },
    "Gemini-2.5-Flash": {
        "animal": (83.6, 40.2, 86.4, 76.1),
        "vocal": (77.8, 25.0, 87.5, 72.9),
        "music": (58.1, 33.0, 86.6, 76.1),
        "mmau": (67.6, 64.0, 83.1, 76.9),
    },
    "GPT-4o-Audio": {
        "animal": (86.1, 51.0, 86.1, 80.0),
        "vocal": (88.9, 29.4, 87.2, 83.8),
        "music": (58.6, 7.6, 87.2, 90.1),
        "mmau": (69.4, 37.2, 71.9, 91.3),
    },
}


class RunReadError(ValueError):
    """A run folder or file is missing, malformed, or holds no AQUA results."""


class PlottingUnavailable(RuntimeError):
    """matplotlib (the `plot` extra) is not installed."""


@dataclass(frozen=True)
class RunMetrics:
    """The AQUA metrics of one run, with the label it is reported under and where it came from."""

    label: str
    source: str
    tasks: dict[str, dict[str, float]]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Cell:
    """One value of the table, in %, with the count it is computed over (None: not known)."""

    value: float
    n: int | None = None

    def text(self) -> str:
        """'66.7 (360)', '—' when undefined, no count for published values."""
        shown = "—" if math.isnan(self.value) else f"{self.value:.1f}"
        return shown if self.n is None else f"{shown} ({self.n})"


@dataclass(frozen=True)
class TableRow:
    """One model's row: per track, the four paper columns and the unparsed rate."""

    label: str
    published: bool
    cells: dict[str, dict[str, Cell]] = field(default_factory=dict)


@dataclass(frozen=True)
class ReportTable:
    """Rows of runs (then published rows) over the tracks the runs cover."""

    tracks: tuple[str, ...]
    rows: tuple[TableRow, ...]
    sources: tuple[str, ...]


MAIN_PREFIX = TASK_NAME_PREFIXES[("main", "plain")]


def split_task(task: str) -> tuple[str, str]:
    """(setting, track): 'aqua_animal' → ('', 'animal'), 'aqua-cot_music' → ('cot', 'music')."""
    for prefix in sorted(set(TASK_NAME_PREFIXES.values()), key=len, reverse=True):
        if task.startswith(prefix):
            setting = "" if prefix == MAIN_PREFIX else prefix.removeprefix("aqua-").rstrip("_")
            return setting, task[len(prefix) :]
    return "", task


def read_json(path: Path) -> Any:
    """A JSON file's content; RunReadError naming the file when unreadable or malformed."""
    try:
        return read_run_json(path)
    except RunError as error:
        raise RunReadError(str(error)) from None


def _results_of(run_dir: Path) -> RunFiles:
    try:
        files = find_outputs(run_dir)
    except RunError as error:
        raise RunReadError(str(error)) from None
    if not files.results:
        raise RunReadError(
            f"{run_dir}: no lm-eval results (results_*.json) found; pass the --output_path "
            "folder of an aqua-eval/lm_eval run, a results_*.json file or an aqua-score --json file"
        )
    return files


def newest_results_file(run_dir: Path) -> tuple[Path, int]:
    """The newest `results_<timestamp>.json` of a run folder (by recorded time), and how many."""
    files = _results_of(run_dir)
    return files.results[-1].path, len(files.results)


def _nan_for_none(metrics: Mapping) -> dict[str, float]:
    return {
        k: (math.nan if v is None else float(v))
        for k, v in metrics.items()
        if v is None or isinstance(v, (int, float))
    }


def load_run(path: str | Path) -> RunMetrics:
    """AQUA metrics of an lm-eval output folder/results file or an `aqua-score --json` file."""
    path = Path(path)
    notes: list[str] = []
    if path.is_dir():
        files = _results_of(path)
        file, payload = files.results[-1].path, files.results_payload
        if len(files.results) > 1:
            notes.append(f"newest of {len(files.results)} results files: {file.name}")
    elif path.is_file():
        file, payload = path, read_json(path)
    else:
        raise RunReadError(f"{path}: no such file or directory")
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), dict):
        raise RunReadError(f"{file}: not lm-eval results or aqua-score --json output")
    if "extractor_versions" in payload:  # written by aqua-score --json
        tasks = {
            t: _nan_for_none(m)
            for t, m in payload["results"].items()
            if t != GROUP and split_task(t)[1] != t and isinstance(m, Mapping)
        }
        label = Path(str(payload.get("source") or file)).name
        notes.append(f"aqua-score output {file.name}")
    else:
        tasks = {t: m for t, m in aqua_rows(payload).items() if t != GROUP}
        label = run_label(payload.get("config") or {})
        configs = payload.get("configs") or {}
        text_only = sorted(
            t for t in tasks if not audio_enabled((configs.get(t) or {}).get("metadata") or {})
        )
        if text_only:
            notes.append(f"text-only (no audio): {', '.join(text_only)}")
    if not tasks:
        raise RunReadError(
            f"{file}: holds no aqua_* task results (an ORCA run with human ratings: --orca-run)"
        )
    return RunMetrics(label=label, source=str(file), tasks=tasks, notes=tuple(notes))


def _unique_labels(labels: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} [{seen[label]}]")
    return out


def _track_sort_key(track: str) -> tuple[int, str]:
    return (TRACK_ORDER.index(track) if track in TRACK_ORDER else len(TRACK_ORDER), track)


def _run_cells(metrics: Mapping[str, float]) -> dict[str, Cell]:
    def count(key: str) -> int | None:
        value = metrics.get(key, math.nan)
        return None if math.isnan(value) else int(value)

    cells = {
        name: Cell(metrics.get(metric, math.nan) * 100, count(n_key))
        for name, metric, n_key in (*COLUMNS, UNPARSED)
    }
    return cells


def build_table(
    runs: Sequence[RunMetrics], *, labels: Sequence[str] | None = None, published: bool = False
) -> ReportTable:
    """The paper-layout table of runs, optionally followed by the paper's published rows."""
    if not runs:
        raise ValueError("build_table needs at least one run")
    if labels is not None and len(labels) != len(runs):
        raise ValueError(f"got {len(labels)} labels for {len(runs)} runs; give one per run")
    names = _unique_labels(list(labels) if labels is not None else [r.label for r in runs])
    tracks = tuple(sorted({split_task(t)[1] for r in runs for t in r.tasks}, key=_track_sort_key))
    rows = []
    for name, run in zip(names, runs, strict=True):
        # Ablation tasks of a run (CoT, other designs) are rows of their own, as in the paper.
        by_setting: dict[str, dict[str, dict[str, Cell]]] = {}
        for task, metrics in run.tasks.items():
            setting, track = split_task(task)
            by_setting.setdefault(setting, {})[track] = _run_cells(metrics)
        for setting in sorted(by_setting):
            label = f"{name} [{setting}]" if setting else name
            rows.append(TableRow(label, False, by_setting[setting]))
    sources = [
        f"{name}: {run.source}" + (f" ({'; '.join(run.notes)})" if run.notes else "")
        for name, run in zip(names, runs, strict=True)
    ]
    if published:
        for model, per_track in PUBLISHED_TABLE1.items():
            cells = {
                track: {
                    name: Cell(value)
                    for (name, _, _), value in zip(COLUMNS, per_track[track], strict=True)
                }
                | {UNPARSED[0]: Cell(math.nan)}
                for track in tracks
                if track in per_track
            }
            rows.append(TableRow(f"{model} (published)", True, cells))
        sources.append(f"(published): {PUBLISHED_SOURCE}, as printed")
    return ReportTable(tracks=tracks, rows=tuple(rows), sources=tuple(sources))


def _header_names(track: str) -> list[str]:
    short = TRACK_SHORT.get(track, track)
    return [f"{short} {name}" for name, _, _ in (*COLUMNS, UNPARSED)]


def _cell(row: TableRow, track: str, name: str) -> Cell:
    return row.cells.get(track, {}).get(name, Cell(math.nan))


def to_markdown(table: ReportTable) -> str:
    """The table as Markdown, with a legend and the source of every row."""
    header = ["model"] + [h for t in table.tracks for h in _header_names(t)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    names = [n for n, _, _ in (*COLUMNS, UNPARSED)]
    for row in table.rows:
        cells = [_cell(row, t, n) for t in table.tracks for n in names]
        lines.append("| " + " | ".join([row.label] + [c.text() for c in cells]) + " |")
    legend = [
        "",
        "Values in %, n in parentheses. Ori: accuracy on Solvable items (n = items). "
        "AAD/IASD/IAQD: conditional accuracy over the clips whose Solvable item was answered "
        "correctly (n = those clips). unparsed: replies no answer could be extracted from "
        "(n = all items of the track). — = undefined (no items).",
    ]
    if any(r.published for r in table.rows):
        legend.append(
            f"Rows marked (published) are copied from {PUBLISHED_SOURCE}, not re-run; † = "
            "chain-of-thought prompting (its CA is most likely conditioned on the non-CoT "
            "Solvable answers). The unreleased MMAU track is shown only if a run covers it."
        )
    legend.append("")
    legend.extend(f"- {source}" for source in table.sources)
    return "\n".join(lines + legend) + "\n"


def to_csv(table: ReportTable) -> str:
    """The table as CSV: one row per model, per track a value (%) and n column per metric."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [n for n, _, _ in (*COLUMNS, UNPARSED)]
    header = ["model", "published"]
    for track in table.tracks:
        for name in names:
            header += [f"{track}_{name.lower()}", f"{track}_{name.lower()}_n"]
    writer.writerow(header)
    for row in table.rows:
        values: list[object] = [row.label, int(row.published)]
        for track in table.tracks:
            for name in names:
                cell = _cell(row, track, name)
                values.append("" if math.isnan(cell.value) else round(cell.value, 6))
                values.append("" if cell.n is None else cell.n)
        writer.writerow(values)
    return buffer.getvalue()


def _matplotlib_figure() -> Any:
    try:
        from matplotlib.figure import Figure
    except ImportError:
        raise PlottingUnavailable(f"the PNG chart needs matplotlib: {PLOT_HINT}") from None
    return Figure


BAR_COLOURS = ("#4c72b0", "#dd8452", "#55a868", "#c44e52")


def plot_table(table: ReportTable) -> Any:
    """A matplotlib Figure: one panel per track; per model, Ori beside the three CAs."""
    figure_class = _matplotlib_figure()
    n_rows = len(table.rows)
    fig = figure_class(
        figsize=(min(max(6.0, 1.5 + 0.75 * n_rows), 24.0), 0.6 + 2.6 * len(table.tracks)),
        layout="constrained",
    )
    axes = fig.subplots(len(table.tracks), 1, sharex=True, squeeze=False)[:, 0]
    bar = 0.8 / len(COLUMNS)
    for ax, track in zip(axes, table.tracks, strict=True):
        for k, (name, _, _) in enumerate(COLUMNS):
            for i, row in enumerate(table.rows):
                value = _cell(row, track, name).value
                x = i + (k - (len(COLUMNS) - 1) / 2) * bar
                ax.bar(
                    x,
                    0.0 if math.isnan(value) else value,
                    bar,
                    color=BAR_COLOURS[k],
                    hatch="//" if row.published else None,
                    alpha=0.55 if row.published else 1.0,
                    label=name if i == 0 else None,
                    gid=f"{track}|{row.label}|{name}",
                )
                if math.isnan(value) and track in row.cells:
                    ax.text(x, 1, "n/a", rotation=90, ha="center", va="bottom", fontsize=6)
        ax.set_title(track.capitalize(), loc="left", fontsize="medium")
        ax.set_ylim(0, 100)
        ax.set_ylabel("%")
        ax.grid(axis="y", alpha=0.3)
    axes[-1].set_xticks(range(n_rows), [r.label for r in table.rows], rotation=30, ha="right")
    fig.legend(
        *axes[0].get_legend_handles_labels(),
        loc="outside upper center",
        ncols=len(COLUMNS),
        title="Ori = Solvable accuracy; AAD / IASD / IAQD = conditional accuracy"
        + ("; hatched = published" if any(r.published for r in table.rows) else ""),
        fontsize="small",
        title_fontsize="small",
    )
    return fig


def write_report(table: ReportTable, out_dir: str | Path, *, chart: bool = True) -> dict[str, Path]:
    """Write table.md, table.csv and (with chart) chart.png; returns their paths."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = {"markdown": out / "table.md", "csv": out / "table.csv"}
    written["markdown"].write_text(to_markdown(table), encoding="utf-8")
    written["csv"].write_text(to_csv(table), encoding="utf-8")
    if chart:
        written["chart"] = out / "chart.png"
        plot_table(table).savefig(written["chart"], dpi=150)
    return written


if TYPE_CHECKING:
    from orca_judge.calibration import Calibration

# Moved to orca_judge.calibration; still importable from here, loaded (with torch) on use.
CALIBRATION_NAMES = frozenset(
    {
        "Calibration",
        "calibration_bins",
        "calibration_markdown",
        "load_calibration",
        "load_run_calibrations",
    }
)


def __getattr__(name: str) -> Any:
    """The ORCA calibration names that moved to orca_judge.calibration."""
    if name in CALIBRATION_NAMES:
        from orca_judge import calibration

        return getattr(calibration, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


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
