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

from aqua_tasks.core.data import TASK_NAME_PREFIXES
from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.extract import EXTRACTOR_ALIASES
from aqua_tasks.core.intervals import metric_intervals
from aqua_tasks.core.pooling import all_tracks_name, all_tracks_rows, pool_outcomes, pool_summaries
from aqua_tasks.core.scoring import metric_value, summarize
from aqua_tasks.reports.table import aqua_rows
from aqua_tasks.runs.lmms_eval_logs import (
    HARNESS_LM_EVAL,
    HARNESS_LMMS_EVAL,
    is_lmms_results,
)
from aqua_tasks.runs.reader import RESULTS_NAME as RESULTS_NAME
from aqua_tasks.runs.reader import (
    RunError,
    RunFiles,
    find_outputs,
    iter_tasks,
    read_run,
    require_aqua_items,
    rescoring_notices,
    run_label,
    score_items,
)
from aqua_tasks.runs.reader import read_json as read_run_json

PLOT_HINT = "pip install 'aqua-bench-eval[plot]'"
# The all-tracks column: every clip of the run's tracks pooled.
ALL_TRACKS = "all"
# Paper column order; MMAU is published but not released; the pooled column last.
TRACK_ORDER: tuple[str, ...] = ("animal", "vocal", "music", "mmau", ALL_TRACKS)
TRACK_SHORT: dict[str, str] = {
    "animal": "An",
    "vocal": "Vo",
    "music": "Mu",
    "mmau": "MMAU",
    ALL_TRACKS: "All",
}
TRACK_TITLES: dict[str, str] = {ALL_TRACKS: "All tracks (clips pooled)", "mmau": "MMAU"}
CHART_LEGEND = (
    "Ori = Solvable accuracy (n = items); AAD / IASD / IAQD = conditional accuracy (CA) over\n"
    "the n clips whose Solvable item is right; dark inside a CA = share of all clips right on\n"
    "both (Ori × CA); whiskers = 95 % intervals (Wilson; CA: clip bootstrap)"
)
JOINT_LABEL = "Solvable and variant both right"
# (column name, metric giving the value, metric giving n)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Ori", "acc", "n_solvable"),
    ("AAD", "ca_aad", "n_ca_aad"),
    ("IASD", "ca_iasd", "n_ca_iasd"),
    ("IAQD", "ca_iaqd", "n_ca_iaqd"),
)
UNPARSED = ("unparsed", "unparsed_rate", "n_items")
PUBLISHED_SOURCE = "Kuan & Lee, ICASSP 2026 (arXiv 2601.12248), Table 1"
PUBLISHED_EXTRACTOR = "authors' rule (official), published"
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


Interval = tuple[float, float]


@dataclass(frozen=True)
class RunMetrics:
    """The AQUA metrics of one run, with the label it is reported under and where it came from.

    `tasks` holds per task (and per all-tracks row, e.g. `aqua`) every metric; `intervals`
    the 95 % intervals of its rates where per-item replies were read; `extractors` the
    extractor each task was scored with; `harness` what wrote the run ("lm-eval",
    "lmms-eval", "authors' results", "aqua-score --json").
    """

    label: str
    source: str
    tasks: dict[str, dict[str, float]]
    notes: tuple[str, ...] = ()
    intervals: dict[str, dict[str, Interval]] = field(default_factory=dict)
    extractors: dict[str, str] = field(default_factory=dict)
    harness: str = HARNESS_LM_EVAL


@dataclass(frozen=True)
class Cell:
    """One value of the table, in %, with its count and 95 % interval (None: not known)."""

    value: float
    n: int | None = None
    low: float | None = None
    high: float | None = None

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
    extractor: str = ""
    harness: str = ""


@dataclass(frozen=True)
class ReportTable:
    """Rows of runs (then published rows) over the tracks the runs cover."""

    tracks: tuple[str, ...]
    rows: tuple[TableRow, ...]
    sources: tuple[str, ...]


MAIN_PREFIX = TASK_NAME_PREFIXES[("main", "plain")]
_PREFIXES = sorted(set(TASK_NAME_PREFIXES.values()), key=len, reverse=True)


def split_task(task: str) -> tuple[str, str]:
    """(setting, track): 'aqua_animal' → ('', 'animal'), 'aqua-cot_music' → ('cot', 'music').

    An all-tracks row is track `all`: 'aqua' → ('', 'all'), 'aqua-cot' → ('cot', 'all').
    """
    for prefix in _PREFIXES:
        setting = "" if prefix == MAIN_PREFIX else prefix.removeprefix("aqua-").rstrip("_")
        if task == prefix.rstrip("_"):
            return setting, ALL_TRACKS
        if task.startswith(prefix):
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
            f"{run_dir}: no lm-eval results (results_*.json) or lmms-eval results "
            "(<stamp>_results.json) found; pass the --output_path folder of an aqua-eval/lm_eval "
            "or lmms-eval run, a results file or an aqua-score --json file"
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


def _is_aqua_row(task: str) -> bool:
    return all_tracks_name(task) is not None or split_task(task)[1] == ALL_TRACKS


def _with_pooled(tasks: dict[str, dict[str, float]]) -> dict[str, dict[str, float]]:
    """Tasks plus an all-tracks row (from the track summaries) for every setting lacking one."""
    out = dict(tasks)
    for name, members in all_tracks_rows(tasks).items():
        out.setdefault(name, pool_summaries([tasks[m] for m in members]))
    return out


def _recorded_extractors(payload: Mapping, tasks: Sequence[str]) -> dict[str, str]:
    configs = payload.get("configs") or {}
    found = {}
    for task in tasks:
        metadata = (configs.get(task) or {}).get("metadata") or {}
        name = (metadata.get("aqua_manifest") or {}).get("extractor") or metadata.get("extractor")
        if name:
            found[task] = EXTRACTOR_ALIASES.get(str(name), str(name))
    return found


def _scored_run(
    path: Path,
    notes: list[str],
    extractor: str | None,
    n_boot: int,
    seed: int,
    data_dir: Path | None = None,
) -> RunMetrics:
    """Metrics and intervals of a run's logged replies, re-scored (by `extractor` if given)."""
    try:
        run = read_run(path, data_dir=data_dir)
        items = require_aqua_items(run)
    except RunError as error:
        raise RunReadError(str(error)) from None
    if run.harness == HARNESS_LMMS_EVAL:
        notes.append(f"items rebuilt by doc id from {data_dir}")
    if extractor is None:
        notes.extend(rescoring_notices(items))
    else:
        notes.append(f"re-scored with the {extractor} extractor")
    values: dict[str, list[dict]] = {}
    tasks: dict[str, dict[str, float]] = {}
    intervals: dict[str, dict[str, Interval]] = {}
    extractors: dict[str, str] = {}
    for task, task_items in iter_tasks(items):
        verdicts = score_items(task_items, extractor=extractor)
        values[task] = [metric_value(v) for v in verdicts]
        extractors[task] = ",".join(sorted({v.extractor for v in verdicts}))
    for name, members in all_tracks_rows(values).items():
        values[name] = pool_outcomes({m: values[m] for m in members})
        extractors[name] = ",".join(sorted({extractors[m] for m in members}))
    for task, task_values in values.items():
        tasks[task] = summarize(task_values)
        intervals[task] = metric_intervals(task_values, n_boot=n_boot, seed=seed)
    return RunMetrics(run.label, str(path), tasks, tuple(notes), intervals, extractors, run.harness)


def load_run(
    path: str | Path,
    *,
    extractor: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    data_dir: str | Path | None = None,
) -> RunMetrics:
    """AQUA metrics of an lm-eval/lmms-eval output folder or results file, or `aqua-score --json`.

    A folder with logged samples is scored item by item, which gives every rate its 95 %
    interval (Wilson; CA: clip bootstrap with `n_boot`, `seed`); `extractor` re-scores it
    with another extractor (e.g. `official`, the authors' rule), which needs those samples.
    An lmms-eval folder's items are rebuilt from `data_dir` (the released files).
    """
    path = Path(path)
    notes: list[str] = []
    if path.is_dir():
        files = _results_of(path)
        file, payload = files.results[-1].path, files.results_payload
        if len(files.results) > 1:
            notes.append(f"newest of {len(files.results)} results files: {file.name}")
    elif path.is_file():
        file, payload, files = path, read_json(path), None
    else:
        raise RunReadError(f"{path}: no such file or directory")
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), dict):
        raise RunReadError(f"{file}: not lm-eval results or aqua-score --json output")
    if "extractor_versions" not in payload:
        configs = payload.get("configs") or {}
        text_only = sorted(
            t
            for t in payload["results"]
            if t in configs and not audio_enabled((configs[t] or {}).get("metadata") or {})
        )
        if text_only:
            notes.append(f"text-only (no audio): {', '.join(text_only)}")
    if files is not None and files.samples:
        return _scored_run(
            path, notes, extractor, n_boot, seed, Path(data_dir) if data_dir else None
        )
    if extractor is not None:
        raise RunReadError(
            f"{path}: re-scoring with --extractor needs the run's per-item replies "
            "(an --output_path folder of a run made with --log_samples)"
        )
    if "extractor_versions" in payload:  # written by aqua-score --json
        tasks = _with_pooled(
            {
                t: _nan_for_none(m)
                for t, m in payload["results"].items()
                if _is_aqua_row(t) and isinstance(m, Mapping)
            }
        )
        recorded = payload.get("intervals") or {}
        intervals = {
            t: {m: (float(lo), float(hi)) for m, (lo, hi) in _interval_pairs(recorded.get(t))}
            for t in tasks
        }
        extractors = {t: str(e) for t, e in (payload.get("extractor") or {}).items() if t in tasks}
        label = Path(str(payload.get("source") or file)).name
        notes.append(f"aqua-score output {file.name}")
        harness = f"aqua-score --json of {payload.get('harness') or HARNESS_LM_EVAL}"
        return RunMetrics(label, str(file), tasks, tuple(notes), intervals, extractors, harness)
    tasks = aqua_rows(payload)
    if not tasks:
        raise RunReadError(
            f"{file}: holds no aqua_* task results (an ORCA run with human ratings: --orca-run)"
        )
    notes.append("no intervals: no per-item samples read (give the folder of a --log_samples run)")
    extractors = _recorded_extractors(payload, list(tasks))
    for name, members in all_tracks_rows(tasks).items():
        names = {extractors[m] for m in members if m in extractors}
        if names:
            extractors[name] = ",".join(sorted(names))
    label = run_label(payload.get("config") or {})
    harness = HARNESS_LMMS_EVAL if is_lmms_results(payload) else HARNESS_LM_EVAL
    return RunMetrics(label, str(file), tasks, tuple(notes), {}, extractors, harness)


def _interval_pairs(recorded: object) -> list[tuple[str, tuple[object, object]]]:
    if not isinstance(recorded, Mapping):
        return []
    return [
        (m, (v[0], v[1]))
        for m, v in recorded.items()
        if isinstance(v, Sequence) and len(v) == 2 and None not in v
    ]


def _unique_labels(labels: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    out = []
    for label in labels:
        seen[label] = seen.get(label, 0) + 1
        out.append(label if seen[label] == 1 else f"{label} [{seen[label]}]")
    return out


def _track_sort_key(track: str) -> tuple[int, str]:
    return (TRACK_ORDER.index(track) if track in TRACK_ORDER else len(TRACK_ORDER), track)


def _run_cells(metrics: Mapping[str, float], intervals: Mapping[str, Interval]) -> dict[str, Cell]:
    def count(key: str) -> int | None:
        value = metrics.get(key, math.nan)
        return None if math.isnan(value) else int(value)

    def bound(metric: str, side: int) -> float | None:
        value = intervals.get(metric, (math.nan, math.nan))[side]
        return None if value is None or math.isnan(value) else value * 100

    return {
        name: Cell(
            metrics.get(metric, math.nan) * 100, count(n_key), bound(metric, 0), bound(metric, 1)
        )
        for name, metric, n_key in (*COLUMNS, UNPARSED)
    }


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
        extractors: dict[str, set[str]] = {}
        for task, metrics in run.tasks.items():
            setting, track = split_task(task)
            by_setting.setdefault(setting, {})[track] = _run_cells(
                metrics, run.intervals.get(task, {})
            )
            if task in run.extractors:
                extractors.setdefault(setting, set()).add(run.extractors[task])
        for setting in sorted(by_setting):
            label = f"{name} [{setting}]" if setting else name
            extractor = ",".join(sorted(extractors.get(setting, set()))) or "not recorded"
            rows.append(TableRow(label, False, by_setting[setting], extractor, run.harness))
    sources = [
        f"{name}: {run.source} [{run.harness}]"
        + (f" ({'; '.join(run.notes)})" if run.notes else "")
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
            rows.append(TableRow(f"{model} (published)", True, cells, PUBLISHED_EXTRACTOR))
        sources.append(f"(published): {PUBLISHED_SOURCE}, as printed")
    return ReportTable(tracks=tracks, rows=tuple(rows), sources=tuple(sources))


def _header_names(track: str) -> list[str]:
    short = TRACK_SHORT.get(track, track)
    return [f"{short} {name}" for name, _, _ in (*COLUMNS, UNPARSED)]


def _cell(row: TableRow, track: str, name: str) -> Cell:
    return row.cells.get(track, {}).get(name, Cell(math.nan))


def to_markdown(table: ReportTable) -> str:
    """The table as Markdown, with a legend and the source of every row."""
    header = ["model", "extractor"] + [h for t in table.tracks for h in _header_names(t)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    names = [n for n, _, _ in (*COLUMNS, UNPARSED)]
    for row in table.rows:
        cells = [_cell(row, t, n) for t in table.tracks for n in names]
        lines.append(
            "| " + " | ".join([row.label, row.extractor] + [c.text() for c in cells]) + " |"
        )
    legend = [
        "",
        "Values in %, n in parentheses. Ori: accuracy on Solvable items (n = items). "
        "AAD/IASD/IAQD: conditional accuracy over the clips whose Solvable item was answered "
        "correctly (n = those clips). unparsed: replies no answer could be extracted from "
        "(n = all items of the track). — = undefined (no items).",
    ]
    if ALL_TRACKS in table.tracks:
        legend.append(
            "All: every clip of the run's tracks pooled (Σ correct / Σ n), not a mean of the "
            "track figures."
        )
    if any(r.published for r in table.rows):
        legend.append(
            f"Rows marked (published) are copied from {PUBLISHED_SOURCE}, not re-run, and "
            "were scored by the authors' rule (our `official` extractor; compare with a run "
            "re-scored by `--extractor official`); † = chain-of-thought prompting (its CA is "
            "most likely conditioned on the non-CoT Solvable answers). The unreleased MMAU "
            "track is shown only if a run covers it."
        )
    legend.append("")
    legend.extend(f"- {source}" for source in table.sources)
    return "\n".join(lines + legend) + "\n"


def to_csv(table: ReportTable) -> str:
    """The table as CSV: one row per model; per track and metric its value (%), n and interval."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    names = [n for n, _, _ in (*COLUMNS, UNPARSED)]
    header = ["model", "published", "extractor"]
    for track in table.tracks:
        for name in names:
            column = f"{track}_{name.lower()}"
            header += [column, f"{column}_n", f"{column}_low", f"{column}_high"]
    writer.writerow(header)

    def number(value: float | None) -> object:
        return "" if value is None or math.isnan(value) else round(value, 6)

    for row in table.rows:
        values: list[object] = [row.label, int(row.published), row.extractor]
        for track in table.tracks:
            for name in names:
                cell = _cell(row, track, name)
                values += [number(cell.value), "" if cell.n is None else cell.n]
                values += [number(cell.low), number(cell.high)]
        writer.writerow(values)
    return buffer.getvalue()


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
            ori = _cell(row, track, "Ori").value
            for k, (name, _, _) in enumerate(COLUMNS):
                cell = _cell(row, track, name)
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


if TYPE_CHECKING:
    from orca_judge.calibration import Calibration


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
