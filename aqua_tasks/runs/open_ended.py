"""Open-ended runs read back: each `aqua-open_<track>` task's figures beside its MC verdicts.

An lm-eval run of open tasks leaves, per task, the samples (each item's logged open value:
clip, type, the rules' reading, the judge threshold) and the per-item file of its judge pass
(`orca_<task>_<filter>_*.jsonl`, each item's expected rating). Both together give the open
figures again, and, when the same run folder holds the multiple-choice task of the track, the
share of clips on which the two forms disagree: the figure a reader of AQUA-Bench asks for
(does a model that picks "Unanswerable" from a list also say "I can't tell" unprompted?).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aqua_tasks.core.open_ended import JudgeRule, judged_outcomes, open_figures, open_value
from aqua_tasks.core.scoring import ItemOutcome, as_outcome
from aqua_tasks.core.task_name import MAIN_FAMILY, TaskName
from aqua_tasks.errors import RunError
from aqua_tasks.runs.discovery import find_outputs, iter_jsonl
from aqua_tasks.runs.judge_results import JudgeResults, find_judge_results
from aqua_tasks.runs.model import RunItem

FILTER = "none"


@dataclass(frozen=True)
class OpenTrackScores:
    """One open task of a run: its figures, and its agreement with the MC task of its track."""

    task: str
    track: str
    figures: Mapping[str, float]
    mc_task: str | None = None
    mc_figures: Mapping[str, float] = field(default_factory=dict)
    # Over clips both forms asked: the share whose Solvable / IAQD verdicts differ.
    disagree_solvable: float = float("nan")
    disagree_iaqd: float = float("nan")
    n_shared_clips: int = 0


def _sample_values(path: Path, metric: str) -> list[tuple[int, object]]:
    rows = []
    for line_no, row in iter_jsonl(path):
        if not isinstance(row, dict) or metric not in row or "doc_id" not in row:
            raise RunError(f"{path}:{line_no}: not a logged sample with {metric!r}")
        if row.get("filter", FILTER) == FILTER:
            rows.append((int(row["doc_id"]), row[metric]))
    return [value for value in sorted(rows, key=lambda r: r[0])]


def open_values(path: Path) -> list[dict]:
    """An open task's logged per-item values, in doc order."""
    values = [value for _, value in _sample_values(path, "acc")]
    bad = next((v for v in values if not isinstance(v, dict) or "rule_correct" not in v), None)
    if bad is not None:
        raise RunError(f"{path}: not an open-ended AQUA task's samples (value {bad!r})")
    return values


def judged_run_outcomes(values: Sequence[Mapping], judge_rows: Mapping) -> tuple[ItemOutcome, ...]:
    """The outcomes the judge's per-item file decides, under the threshold the run recorded."""
    thresholds = {float(v["threshold"]) for v in values}
    if len(thresholds) != 1:
        raise RunError(f"open-ended samples mix judge thresholds {sorted(thresholds)}")
    units = []
    for value in values:
        row = judge_rows.get(str(value["id"]))
        units.append(None if row is None else float(row["expected_unit"]))
    return judged_outcomes(values, units, JudgeRule(thresholds.pop()))


def _by_clip(outcomes: Sequence[ItemOutcome], item_type: str) -> dict[object, bool]:
    return {o.clip: o.correct for o in outcomes if o.type == item_type}


def _disagreement(left: Mapping, right: Mapping) -> tuple[float, int]:
    shared = sorted(set(left) & set(right), key=str)
    if not shared:
        return float("nan"), 0
    return sum(left[c] != right[c] for c in shared) / len(shared), len(shared)


def is_open_item(item: RunItem) -> bool:
    """Whether a run item is one of an open-ended AQUA task (its doc says `form: open`)."""
    name = TaskName.parse(item.task)
    return item.item is None and name is not None and name.is_open_ended and "form" in item.doc


def open_task_records(
    items: Sequence[RunItem], judge: JudgeResults
) -> tuple[list[dict], list[dict]]:
    """One open task's per-item records as the judge decides them and as the rules do.

    In the layout the paired tests read (`scoring.metric_value`): id, clip, type, correct,
    parsed (the judge rated it), excluded. The values are rebuilt from each logged doc and
    reply, as the task computed them.
    """
    values = [open_value(i.doc, i.reply) for i in items]
    judged = judged_run_outcomes(values, judge.by_key())
    records = []
    rules = []
    for value, outcome in zip(values, judged, strict=True):
        base = {"id": value["id"], "clip": value["clip"], "type": value["type"], "excluded": False}
        records.append(base | {"correct": outcome.correct, "parsed": outcome.parsed})
        rules.append(base | {"correct": bool(value["rule_correct"]), "parsed": True})
    return records, rules


def open_settings(items: Sequence[RunItem]) -> set[tuple[str, str]]:
    """The (prompt version, judge threshold) pairs an open task's items were asked under."""
    return {(str(i.doc.get("prompt_version")), str(i.doc.get("judge_threshold"))) for i in items}


def has_choice_tasks(run: str | Path) -> bool:
    """Whether a run holds samples or results of a multiple-choice AQUA task."""
    from aqua_tasks.core.task_name import choice_task

    files = find_outputs(run)
    results = (files.results_payload or {}).get("results") or {}
    return bool(files.authors) or any(
        choice_task(name) is not None for name in [*(f.name for f in files.samples), *results]
    )


def open_run_scores(run: str | Path) -> list[OpenTrackScores]:
    """Every open task of a run folder, scored from its samples and its judge's per-item file."""
    from aqua_tasks.core.scoring import summarize

    files = find_outputs(run)
    samples = {f.name: f.path for f in files.samples}
    judges = find_judge_results(run)
    scores = []
    for task, path in sorted(samples.items()):
        name = TaskName.parse(task)
        if name is None or not name.is_open_ended:
            continue
        judged = judges.get((task, FILTER))
        if judged is None:
            raise RunError(
                f"{run}: {task} has samples but no per-item judge file orca_{task}_{FILTER}_*"
                ".jsonl beside them: give the run's --output_path folder"
            )
        values = open_values(path)
        outcomes = judged_run_outcomes(values, judged.by_key())
        mc_task = TaskName(MAIN_FAMILY, name.track).format()
        mc_figures: Mapping[str, float] = {}
        disagree_s = disagree_i = float("nan")
        shared = 0
        if mc_task in samples:
            mc = [as_outcome(v) for _, v in _sample_values(samples[mc_task], "acc")]
            mc_figures = summarize(mc)
            disagree_s, _ = _disagreement(_by_clip(mc, "Solvable"), _by_clip(outcomes, "Solvable"))
            disagree_i, shared = _disagreement(_by_clip(mc, "IAQD"), _by_clip(outcomes, "IAQD"))
        scores.append(
            OpenTrackScores(
                task=task,
                track=name.track,
                figures=open_figures(values, outcomes),
                mc_task=mc_task if mc_figures else None,
                mc_figures=mc_figures,
                disagree_solvable=disagree_s,
                disagree_iaqd=disagree_i,
                n_shared_clips=shared,
            )
        )
    return scores


def _cell(value: float) -> str:
    return "—" if value != value else f"{value:.3f}"


def open_markdown(rows: Sequence[tuple[str, OpenTrackScores]]) -> str:
    """The MC and open-ended rows side by side, per run label and track."""
    lines = [
        "| run | track | MC Ori | MC CA_IAQD | open Ori | open CA_IAQD (n) "
        "| open CA_IAQD rules (n) | IAQD disagree (clips) | Solvable disagree |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for label, s in rows:
        f, mc = s.figures, s.mc_figures
        lines.append(
            f"| {label} | {s.track} | {_cell(mc.get('acc', float('nan')))} "
            f"| {_cell(mc.get('ca_iaqd', float('nan')))} | {_cell(f['acc'])} "
            f"| {_cell(f['ca_iaqd'])} ({int(f['n_ca_iaqd'])}) "
            f"| {_cell(f['ca_iaqd_rule'])} ({int(f['n_ca_iaqd_rule'])}) "
            f"| {_cell(s.disagree_iaqd)} ({s.n_shared_clips}) | {_cell(s.disagree_solvable)} |"
        )
    return "\n".join(lines)
