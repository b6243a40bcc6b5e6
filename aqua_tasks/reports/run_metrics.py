"""What aqua report reads of a run: its AQUA metrics, from the one run reader or a results file.

A run folder with logged samples is read by `aqua_tasks.runs` and scored by its one scoring
pipeline (`score_run`, the released tracks pooled); a results file alone (lm-eval's or
lmms-eval's) gives its recorded figures, and an `aqua score --json` file its own, read back
by `RunScores.from_json`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aqua_tasks.core.docs import audio_enabled
from aqua_tasks.core.extract import EXTRACTOR_ALIASES
from aqua_tasks.core.pooling import (
    MAIN_ROW,
    all_tracks_name,
    all_tracks_rows,
    pool_summaries,
    released_pools,
)
from aqua_tasks.core.task_name import CHOICE_FAMILIES, choice_task, family_setting
from aqua_tasks.errors import RunReadError
from aqua_tasks.runs import (
    HARNESS_LM_EVAL,
    HARNESS_LMMS_EVAL,
    RunFiles,
    RunScores,
    ScoreSettings,
    find_outputs,
    is_lmms_results,
    is_run_scores,
    read_json,
    read_run,
    run_label,
    score_run,
    when,
)

# The all-tracks column: every clip of the run's released tracks pooled (never a built one).
ALL_TRACKS = "all"
# A pooled row written by `lm_eval_results.fix_aqua_results` has its counts; lm-eval's own
# group row (a size-weighted mean of the tracks) has none.
POOLED_MARK = "n_ca_aad"


Interval = tuple[float, float]


@dataclass(frozen=True)
class RunMetrics:
    """The AQUA metrics of one run, with the label it is reported under and where it came from.

    `tasks` holds per task (and per all-tracks row, e.g. `aqua`) every metric; `intervals`
    the 95 % intervals of its rates where per-item replies were read; `extractors` the
    extractor each task was scored with; `harness` what wrote the run ("lm-eval",
    "lmms-eval", "authors' results", "aqua score --json").
    """

    label: str
    source: str
    tasks: dict[str, dict[str, float]]
    notes: tuple[str, ...] = ()
    intervals: dict[str, dict[str, Interval]] = field(default_factory=dict)
    extractors: dict[str, str] = field(default_factory=dict)
    harness: str = HARNESS_LM_EVAL
    # Per task, the file, model and date its figures come from (`RunSource.as_record`).
    read_from: tuple[dict[str, str | None], ...] = ()


def split_task(task: str) -> tuple[str, str]:
    """(setting, track): 'aqua_animal' → ('', 'animal'), 'aqua-cot_music' → ('cot', 'music').

    An all-tracks row is track `all`: 'aqua' → ('', 'all'), 'aqua-cot' → ('cot', 'all').
    """
    if task in CHOICE_FAMILIES:
        return family_setting(task), ALL_TRACKS
    name = choice_task(task)
    return (name.setting, name.track) if name is not None else ("", task)


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
    main = [t for t in tasks if all_tracks_name(t) == MAIN_ROW]
    if MAIN_ROW in per_task and main:
        pooled_rows.setdefault(MAIN_ROW, main)
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


def _results_of(run_dir: Path) -> RunFiles:
    files = find_outputs(run_dir)
    if not files.results:
        raise RunReadError(
            f"{run_dir}: no lm-eval results (results_*.json) or lmms-eval results "
            "(<stamp>_results.json) found; pass the --output_path folder of an aqua eval/lm_eval "
            "or lmms-eval run, a results file or an aqua score --json file"
        )
    return files


def newest_results_file(run_dir: Path) -> tuple[Path, int]:
    """The newest `results_<timestamp>.json` of a run folder (by recorded time), and how many."""
    files = _results_of(run_dir)
    return files.results[-1].path, len(files.results)


def _is_aqua_row(task: str) -> bool:
    return all_tracks_name(task) is not None or split_task(task)[1] == ALL_TRACKS


def _with_pooled(
    tasks: dict[str, dict[str, float]], notes: list[str]
) -> tuple[dict[str, dict[str, float]], set[str]]:
    """Tracks plus each setting's All row over its released tracks; the rows recomputed.

    A recorded All row is kept when it pools exactly those tracks, else pooled again from
    the track summaries (or dropped: fewer than two released tracks).
    """
    out = {t: m for t, m in tasks.items() if split_task(t)[1] != ALL_TRACKS}
    pools, pool_notes = released_pools(out)
    notes.extend(pool_notes)
    recomputed = set()
    for name, members in pools.items():
        whole = all_tracks_rows(out)[name] == members
        if whole and name in tasks:
            out[name] = tasks[name]
        else:
            out[name] = pool_summaries([out[m] for m in members])
            recomputed.add(name)
    return out, recomputed


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
    settings = ScoreSettings(extractor=extractor, n_boot=n_boot, seed=seed, released_only=True)
    run = read_run(path, data_dir=data_dir)
    scores = score_run(run, settings)
    if run.harness == HARNESS_LMMS_EVAL and data_dir is not None:
        notes.append(f"items rebuilt by doc id from {data_dir}")
    sources = run.sources()
    notes.extend(f"{s.task} from {s.describe()}" for s in sources)
    notes.extend(scores.notes)
    if extractor is None:
        notes.extend(scores.rescoring)
    else:
        notes.append(f"re-scored with the {extractor} extractor")
    notes.extend(released_pools(scores.tasks)[1])
    return RunMetrics(
        run.label,
        str(path),
        scores.results,
        tuple(notes),
        scores.intervals,
        scores.extractors,
        run.harness,
        tuple(s.as_record() for s in sources),
    )


def load_run_metrics(
    path: str | Path,
    *,
    extractor: str | None = None,
    n_boot: int = 2000,
    seed: int = 0,
    data_dir: str | Path | None = None,
) -> RunMetrics:
    """AQUA metrics of an lm-eval/lmms-eval output folder or results file, or `aqua score --json`.

    A folder with logged samples is scored item by item, which gives every rate its 95 %
    interval (Wilson; CA: clip bootstrap with `n_boot`, `seed`); `extractor` re-scores it
    with another extractor (e.g. `official`, the authors' rule), which needs those samples.
    An lmms-eval folder's items are rebuilt from `data_dir` (the released files), else from
    the folder the run recorded when its files hash as recorded (a note says so).
    """
    path = Path(path)
    notes: list[str] = []
    if path.is_dir():
        files = _results_of(path)
        file, payload = files.results[-1].path, files.results_payload
        if len(files.results) > 1:
            notes.append(f"newest of {len(files.results)} results files: {file.name}")
    elif path.is_file():
        payload = read_json(path)
        file, files = path, None
    else:
        raise RunReadError(f"{path}: no such file or directory")
    if not isinstance(payload, dict) or not isinstance(payload.get("results"), dict):
        raise RunReadError(f"{file}: not lm-eval results or aqua score --json output")
    if not is_run_scores(payload):
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
    if is_run_scores(payload):
        scores = RunScores.from_json(payload)
        tasks, recomputed = _with_pooled(
            {t: m for t, m in scores.results.items() if _is_aqua_row(t)}, notes
        )
        intervals = {
            # An undefined interval (null) is left out; a recomputed row's is of another row.
            t: {m: i for m, i in scores.intervals.get(t, {}).items() if not math.isnan(sum(i))}
            for t in tasks
            if t not in recomputed
        }
        extractors = {t: e for t, e in scores.extractors.items() if t in tasks}
        label = Path(scores.source or str(file)).name
        notes.append(f"aqua score output {file.name}")
        harness = f"aqua score --json of {scores.harness or HARNESS_LM_EVAL}"
        return RunMetrics(label, str(file), tasks, tuple(notes), intervals, extractors, harness)
    tasks, _ = _with_pooled(aqua_rows(payload), notes)
    if not tasks:
        raise RunReadError(
            f"{file}: holds no aqua_* task results (an ORCA run with human ratings: --orca-run)"
        )
    notes.append("no intervals: no per-item samples read (give the folder of a --log_samples run)")
    extractors = _recorded_extractors(payload, list(tasks))
    for name, members in released_pools(tasks)[0].items():
        names = {extractors[m] for m in members if m in extractors}
        if names:
            extractors[name] = ",".join(sorted(names))
    label = run_label(payload.get("config") or {})
    harness = HARNESS_LMMS_EVAL if is_lmms_results(payload) else HARNESS_LM_EVAL
    date = payload.get("date")
    dated = isinstance(date, (int, float)) and not isinstance(date, bool)
    read_from = tuple(
        {
            "task": task,
            "file": str(file),
            "model": label,
            "date": when(float(date)) if dated else None,
            "dated_by": "recorded" if dated else None,
            "results": str(file),
        }
        for task in tasks
        if all_tracks_name(task) is not None  # the track rows, not the pooled one
    )
    return RunMetrics(label, str(file), tasks, tuple(notes), {}, extractors, harness, read_from)
