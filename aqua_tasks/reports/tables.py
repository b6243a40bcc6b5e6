"""The paper's table: built from runs (and the published rows), rendered as Markdown or CSV.

`build_table` lays runs out as the paper does (a row per model and setting, per track Ori and
the three CAs with n and the unparsed rate); `format_table` renders one run's rows in the
per-track layout `aqua eval`, `aqua score` and `aqua demo` print, and `paper_table` does so for
an lm-eval results payload.
"""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from aqua_tasks.core.pooling import all_tracks_name, pooled_tracks
from aqua_tasks.reports.published import PUBLISHED_EXTRACTOR, PUBLISHED_SOURCE, PUBLISHED_TABLE1
from aqua_tasks.reports.run_metrics import ALL_TRACKS, Interval, RunMetrics, aqua_rows, split_task

# Paper column order; MMAU is published but not released; the pooled column last.
TRACK_ORDER: tuple[str, ...] = ("animal", "vocal", "music", "mmau", ALL_TRACKS)
TRACK_SHORT: dict[str, str] = {
    "animal": "An",
    "vocal": "Vo",
    "music": "Mu",
    "mmau": "MMAU",
    ALL_TRACKS: "All",
}
# (column name, metric giving the value, metric giving n)
COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("Ori", "acc", "n_solvable"),
    ("AAD", "ca_aad", "n_ca_aad"),
    ("IASD", "ca_iasd", "n_ca_iasd"),
    ("IAQD", "ca_iaqd", "n_ca_iaqd"),
)
UNPARSED = ("unparsed", "unparsed_rate", "n_items")


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


def cell_of(row: TableRow, track: str, name: str) -> Cell:
    """A row's cell of a track and column; undefined (NaN) where the row has none."""
    return row.cells.get(track, {}).get(name, Cell(math.nan))


def to_markdown(table: ReportTable) -> str:
    """The table as Markdown, with a legend and the source of every row."""
    header = ["model", "extractor"] + [h for t in table.tracks for h in _header_names(t)]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    names = [n for n, _, _ in (*COLUMNS, UNPARSED)]
    for row in table.rows:
        cells = [cell_of(row, t, n) for t in table.tracks for n in names]
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
            "All: every clip of a run's released tracks (animal, vocal, music) pooled "
            "(Σ correct / Σ n), as `--tasks aqua` pools them, not a mean of the track figures. "
            "A built track (MMAU) is never in All: it has its own columns, so All means the "
            "same in every row whether MMAU was run or not. The paper's Table 1 prints no All."
        )
    if any(r.published for r in table.rows):
        legend.append(
            f"Rows marked (published) are copied from {PUBLISHED_SOURCE}, not re-run, and "
            "were scored by the authors' rule (our `official` extractor; compare with a run "
            "re-scored by `--extractor official`); † = chain-of-thought prompting (its CA is "
            "most likely conditioned on the non-CoT Solvable answers). The unreleased MMAU "
            "track is shown only if a run covers it."
        )
    if any(r.published for r in table.rows) and "mmau" in table.tracks:
        legend.append(
            "MMAU: our track is built from MMAU test-mini by `aqua build`; its AAD and IASD "
            "follow the paper's rules, but its IAQD questions are generated by aqua build, not "
            "the authors' (never released): the published MMAU columns are comparable in "
            "construction, not item for item."
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
                cell = cell_of(row, track, name)
                values += [number(cell.value), "" if cell.n is None else cell.n]
                values += [number(cell.low), number(cell.high)]
        writer.writerow(values)
    return buffer.getvalue()


def paper_table(results: Mapping) -> str | None:
    """Markdown table in the paper's layout, or None when the run has no AQUA task."""
    rows = aqua_rows(results)
    if not rows:
        return None
    # The honest-figure rule: `aqua` pools the released three under --tasks aqua, and also
    # the built MMAU track under 'aqua_*' when it is built; each pooled row says which.
    members = results.get("group_subtasks") or {}
    pools = [
        f"{name} = {'+'.join(pooled_tracks(members[name]))}"
        for name in rows
        if name in members and all_tracks_name(name) is None
    ]
    return (
        format_table(rows)
        + "\n\nOri = Solvable accuracy; AAD/IASD/IAQD = conditional accuracy over the clips "
        "whose Solvable item was answered correctly (n = clips); read them with acc_*, "
        "joint_* and unparsed_rate. Rows aqua (and aqua-<setting>) pool every clip of the "
        "tracks they name: Σ correct / Σ n, not a mean of the track figures"
        + (f" ({'; '.join(pools)})." if pools else ".")
    )


def format_table(
    rows: Mapping[str, Mapping[str, float]],
    *,
    intervals: Mapping[str, Mapping[str, tuple[float, float]]] | None = None,
    percent: bool = True,
) -> str:
    """Markdown table in the paper's layout: per track Ori (acc) and the three CAs, with n.

    With `intervals` (per row, per metric) each rate shows its 95 % interval in brackets.
    """
    header = (
        "| track | Ori | AAD | IASD | IAQD | n Ori | n AAD | n IASD | n IAQD | unparsed |\n"
        "|---|---|---|---|---|---|---|---|---|---|"
    )
    lines = [header]
    scale = 100.0 if percent else 1.0

    def number(value: float | None) -> str:
        return "—" if value is None or math.isnan(value) else f"{value * scale:.1f}"

    def cell(name: str, metric: str) -> str:
        text = number(rows[name].get(metric, math.nan))
        low, high = (intervals or {}).get(name, {}).get(metric, (math.nan, math.nan))
        if text == "—" or math.isnan(low):
            return text
        return f"{text} [{number(low)}, {number(high)}]"

    for name, m in rows.items():
        rates = [cell(name, k) for k in ("acc", "ca_aad", "ca_iasd", "ca_iaqd")]
        counts = [
            _count(m.get(k, math.nan)) for k in ("n_solvable", "n_ca_aad", "n_ca_iasd", "n_ca_iaqd")
        ]
        cells = [name, *rates, *counts, number(m.get("unparsed_rate", math.nan))]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _count(value: float) -> str:
    return "—" if value is None or math.isnan(value) else str(int(value))
