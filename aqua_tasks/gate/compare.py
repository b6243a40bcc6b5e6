"""The regression gate: whether two runs are comparable, and their paired comparisons.

Reads two runs (through `aqua_tasks.runs`), refuses pairs that cannot be compared item by item
(tasks, items, manifest, audio mode, judge checkpoint), compares every metric with the tests in
`aqua_tasks.gate.paired` and writes the Markdown summary. `aqua-regress` is its command line.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aqua_tasks.core.data import AquaDataError
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, EXTRACTOR_ALIASES
from aqua_tasks.core.manifest import MANIFEST_FIELDS
from aqua_tasks.core.scoring import metric_value
from aqua_tasks.gate.paired import (
    JUDGE_METRIC,
    MIN_JUDGE_UNITS,
    MetricComparison,
    compare_judge,
    compare_task,
)
from aqua_tasks.runs.judge_results import JudgeResults, JudgeResultsError, read_judge_results
from aqua_tasks.runs.lmms_eval_logs import HARNESS_LM_EVAL
from aqua_tasks.runs.reader import (
    RunItem,
    iter_tasks,
    read_run,
    require_aqua_items,
    score_items,
)
from eval_common.cli import progress as progress_bar

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2
# Manifest fields that must match; package_version and the file name may differ. Both runs
# are re-scored here by the current code of their extractor, so a recorded extractor version
# (or an old name of the same extractor) is no reason to refuse a baseline.
COMPARED_MANIFEST = (
    "track",
    "variant",
    "prompt_style",
    "prompt_sha256",
    "data_sha256",
    "extractor",
)
# Doc fields that are not the question: the machine's (audio is checked on its own), the run
# manifest (compared through COMPARED_MANIFEST; 0.1.0 repeated it in every doc, later docs keep
# only manifest.DOC_FIELDS) and the clip index (derived from the data file, whose hash is
# compared), so runs of either doc layout compare.
LOCAL_DOC_FIELDS = frozenset({"audio_path", "audio_error", "clip_index", *MANIFEST_FIELDS})
METRIC_NAMES = {
    "acc": "Ori (acc)",
    "ca_aad": "CA AAD",
    "ca_iasd": "CA IASD",
    "ca_iaqd": "CA IAQD",
    "joint_aad": "joint AAD",
    "joint_iasd": "joint IASD",
    "joint_iaqd": "joint IAQD",
    "unparsed_rate": "unparsed",
}
# Judge inputs that must agree item by item for judge scores to be comparable (the
# candidate's reply is what is compared).
JUDGE_INPUTS = ("question", "reference", "rationale", "transcript", "ratings")
SCORE_CHUNK = 500


@dataclass(frozen=True)
class ComparedRun:
    """A run's replies with what is needed to tell whether two runs are comparable.

    `samples` holds every logged item by (task, item id) for AQUA tasks and (task, doc_id)
    for others; `judges` the ORCA per-item results by (task, filter); `judge_meta` what the
    results file records about each task's judge (`metadata.orca_inputs`).
    """

    path: Path
    label: str
    replies: list[RunItem]
    samples: dict[tuple[str, int], RunItem]
    audio: dict[str, bool]
    judges: dict[tuple[str, str], JudgeResults] = dataclasses.field(default_factory=dict)
    judge_meta: dict[str, Mapping] = dataclasses.field(default_factory=dict)
    harness: str = HARNESS_LM_EVAL


def load_run(path: Path, data_dir: Path | None = None) -> ComparedRun:
    """Replies, logged hashes, judge results, label and audio mode of a run folder or file.

    `data_dir` (the released files) rebuilds the items of an lmms-eval log, which logs none;
    its items then carry that content, which the comparability checks compare.
    """
    run = read_run(path, data_dir=data_dir)
    try:
        judges = {
            (r.task, r.filter): r for r in (read_judge_results(f.path) for f in run.files.judges)
        }
    except JudgeResultsError as error:
        raise AquaDataError(str(error)) from None
    # Judge results without --log_samples: only the judge can be compared.
    replies = run.aqua_items if judges or run.other_items else require_aqua_items(run)
    return ComparedRun(
        path=path,
        label=run.label,
        replies=replies,
        samples={i.key: i for i in run.items},
        audio=run.audio(),
        judges=dict(sorted(judges.items())),
        judge_meta={t: m.get("orca_inputs") or {} for t, m in run.task_metadata().items()},
        harness=run.harness,
    )


def _setting(reply: RunItem, field: str) -> object:
    if field == "extractor":
        name = reply.extractor or reply.manifest.get("extractor") or DEFAULT_EXTRACTOR
        return EXTRACTOR_ALIASES.get(name, name)
    if field == "variant":
        return reply.item.variant
    if field == "track":
        return reply.item.track
    if field == "exclude_defective":
        return reply.exclude_defective
    return reply.manifest.get(field)


def _example(keys: Sequence[tuple[str, int]]) -> str:
    shown = ", ".join(str(i) for _, i in sorted(keys)[:3])
    return f"{len(keys)} items, e.g. id {shown}"


def why_not_comparable(base: ComparedRun, cand: ComparedRun) -> str | None:
    """The first reason the two runs cannot be compared item by item, or None."""
    if not (base.replies or base.judges or cand.replies or cand.judges):
        return "nothing to compare: neither run has aqua_* task replies or ORCA judge results"
    base_tasks = dict(iter_tasks(base.replies))
    cand_tasks = dict(iter_tasks(cand.replies))
    if set(base_tasks) != set(cand_tasks):
        return (
            f"different tasks (baseline: {', '.join(sorted(base_tasks))}; "
            f"candidate: {', '.join(sorted(cand_tasks))})"
        )
    for task in sorted(base_tasks):
        b = {r.item.id: r for r in base_tasks[task]}
        c = {r.item.id: r for r in cand_tasks[task]}
        if b.keys() != c.keys():
            only_b, only_c = sorted(b.keys() - c.keys()), sorted(c.keys() - b.keys())
            return (
                f"{task}: different items ({len(only_b)} only in baseline, {len(only_c)} only in "
                f"candidate; e.g. id {(only_b or only_c)[0]}) — same --limit/--samples needed"
            )
        for field in (*COMPARED_MANIFEST, "exclude_defective"):
            bv = {str(_setting(r, field)) for r in b.values()}
            cv = {str(_setting(r, field)) for r in c.values()}
            # A field neither run format records (e.g. the authors' JSON has no manifest) is
            # not evidence of a difference.
            if bv != cv and "None" not in bv | cv:
                return (
                    f"{task}: {field} differs (baseline {', '.join(sorted(bv))}; "
                    f"candidate {', '.join(sorted(cv))})"
                )
        if task in base.audio and task in cand.audio and base.audio[task] != cand.audio[task]:
            modes = {True: "with audio", False: "text-only"}
            return (
                f"{task}: audio input differs (baseline {modes[base.audio[task]]}, "
                f"candidate {modes[cand.audio[task]]})"
            )
        reason = _sample_reason(task, [(task, i) for i in b], base, cand)
        if reason is not None:
            return reason
    return _judge_reason(base, cand)


def _sample_reason(
    task: str, keys: Sequence[tuple[str, int]], base: ComparedRun, cand: ComparedRun
) -> str | None:
    """Why the logged prompts or questions of these items differ between the runs, or None."""
    both = [k for k in keys if k in base.samples and k in cand.samples]
    prompts = [
        k
        for k in both
        if base.samples[k].prompt_hash != cand.samples[k].prompt_hash
        and base.samples[k].prompt_hash is not None
    ]
    lm_eval_only = base.harness == cand.harness == HARNESS_LM_EVAL
    if prompts:
        # lmms-eval logs the prompt (`input`), lm-eval its hash: both compare as a SHA-256.
        hashed = "lm-eval prompt_hash" if lm_eval_only else "SHA-256 of the logged prompt"
        return (
            f"{task}: prompt differs ({hashed}; {_example(prompts)}) — "
            "chat template, system instruction, few-shot or prompt text changed"
        )
    fields: set[str] = set()
    docs = []
    for k in both:
        bs, cs = base.samples[k], cand.samples[k]
        if bs.doc_hash == cs.doc_hash:
            continue
        differing = {
            f
            for f in bs.doc.keys() | cs.doc.keys()
            if f not in LOCAL_DOC_FIELDS and bs.doc.get(f) != cs.doc.get(f)
        }
        if differing:
            fields |= differing
            docs.append(k)
    if docs:
        # lmms-eval items are rebuilt from the released data: their content is what differs.
        compared = "lm-eval doc_hash" if lm_eval_only else "item content"
        return (
            f"{task}: questions differ ({compared}; fields {', '.join(sorted(fields))}; "
            f"{_example(docs)})"
        )
    return None


def judge_identity(run: ComparedRun, results: JudgeResults) -> dict[str, object]:
    """checkpoint / fingerprint / clamp of a pass: from its rows, else the results file."""
    recorded = dict(results.judge or {})
    meta = run.judge_meta.get(results.task) or {}
    for key, meta_key in (
        ("checkpoint", "checkpoint"),
        ("fingerprint", "judge_fingerprint"),
        ("clamp", "clamp"),
    ):
        if recorded.get(key) is None and meta.get(meta_key) is not None:
            recorded[key] = meta[meta_key]
    return recorded


def _judge_reason(base: ComparedRun, cand: ComparedRun) -> str | None:
    """Why the two runs' ORCA judge scores cannot be compared item by item, or None."""
    for key in sorted(base.judges.keys() ^ cand.judges.keys()):
        which = "baseline" if key in base.judges else "candidate"
        return f"{key[0]}: ORCA judge scores (filter {key[1]}) only in the {which}"
    for key in sorted(base.judges):
        task = key[0]
        b, c = base.judges[key], cand.judges[key]
        bi, ci = judge_identity(base, b), judge_identity(cand, c)
        for run, identity, results in (("baseline", bi, b), ("candidate", ci, c)):
            if identity.get("checkpoint") is None and identity.get("fingerprint") is None:
                return f"{task}: the {run} does not record its judge checkpoint ({results.path})"
        if bi.get("fingerprint") and ci.get("fingerprint"):
            same = bi["fingerprint"] == ci["fingerprint"]
        else:  # files written before fingerprints were recorded: the path is all there is
            same = bi.get("checkpoint") == ci.get("checkpoint")
        if not same:
            shown = [
                f"{run} {i.get('checkpoint')}"
                + (f" (fingerprint {i['fingerprint']})" if i.get("fingerprint") else "")
                for run, i in (("baseline", bi), ("candidate", ci))
            ]
            return f"{task}: different ORCA judge checkpoints ({'; '.join(shown)})"
        if None not in (bi.get("clamp"), ci.get("clamp")) and bi["clamp"] != ci["clamp"]:
            return (
                f"{task}: ORCA judge clamping differs (baseline clamp={bi['clamp']}; "
                f"candidate clamp={ci['clamp']})"
            )
        brows, crows = b.by_key(), c.by_key()
        if brows.keys() != crows.keys():
            only_b = sorted(brows.keys() - crows.keys())
            only_c = sorted(crows.keys() - brows.keys())
            return (
                f"{task}: different judged items ({len(only_b)} only in baseline, {len(only_c)} "
                f"only in candidate; e.g. {(only_b or only_c)[0]})"
            )
        fields: set[str] = set()
        items = []
        for k in sorted(brows):
            bin_, cin = brows[k]["inputs"], crows[k]["inputs"]
            differing = {f for f in JUDGE_INPUTS if bin_.get(f) != cin.get(f)}
            if differing:
                fields |= differing
                items.append(k)
        if items:
            return (
                f"{task}: the judge read different inputs (fields {', '.join(sorted(fields))}; "
                f"{len(items)} items, e.g. {items[0]})"
            )
        aqua_tasks = {r.task for r in base.replies}
        if task not in aqua_tasks:
            doc_ids = {i for t, i in base.samples.keys() | cand.samples.keys() if t == task}
            reason = _sample_reason(task, [(task, i) for i in sorted(doc_ids)], base, cand)
            if reason is not None:
                return reason
    return None


def _values(replies: list[RunItem], progress: Any) -> list[dict]:
    out = []
    for start in range(0, len(replies), SCORE_CHUNK):
        chunk = replies[start : start + SCORE_CHUNK]
        verdicts = score_items(chunk)
        out.extend(metric_value(v) for v in verdicts)
        progress.update(len(chunk))
    return out


def _judge_comparison(
    base: ComparedRun,
    cand: ComparedRun,
    key: tuple[str, str],
    *,
    n_boot: int,
    seed: int,
    min_units: int,
) -> MetricComparison:
    task, filter_name = key
    b, c = base.judges[key].by_key(), cand.judges[key].by_key()
    # AQUA items are resampled by clip, as the four items of a clip are not independent.
    clips = {str(r.item.id): r.item.clip_key for r in base.replies if r.task == task}
    groups = clips if clips and clips.keys() >= b.keys() else None
    return compare_judge(
        task,
        filter_name,
        {k: float(r["orca"]) for k, r in b.items()},
        {k: float(r["orca"]) for k, r in c.items()},
        groups,
        n_boot=n_boot,
        seed=seed,
        min_units=min_units,
    )


def compare_runs(
    base: ComparedRun,
    cand: ComparedRun,
    *,
    n_boot: int,
    seed: int,
    min_ca_clips: int,
    min_judge_items: int = MIN_JUDGE_UNITS,
    progress: bool = True,
) -> list[MetricComparison]:
    """Unadjusted comparisons of every tested metric and judge score, in task order."""
    base_tasks = dict(iter_tasks(base.replies))
    cand_tasks = dict(iter_tasks(cand.replies))
    comparisons: list[MetricComparison] = []
    total = len(base.replies) + len(cand.replies)
    with progress_bar(None, "scoring", progress, total=total) as bar:
        for task in sorted(set(base_tasks) | {t for t, _ in base.judges}):
            if task in base_tasks:
                comparisons += compare_task(
                    task,
                    _values(base_tasks[task], bar),
                    _values(cand_tasks[task], bar),
                    n_boot=n_boot,
                    seed=seed,
                    min_ca_clips=min_ca_clips,
                )
            comparisons += [
                _judge_comparison(
                    base, cand, key, n_boot=n_boot, seed=seed, min_units=min_judge_items
                )
                for key in sorted(base.judges)
                if key[0] == task
            ]
    return comparisons


def metric_name(metric: str) -> str:
    """How a compared metric is named in the summary."""
    if metric.startswith(f"{JUDGE_METRIC},"):
        filter_name = metric.partition(",")[2]
        return "ORCA judge" + ("" if filter_name == "none" else f" [{filter_name}]")
    return METRIC_NAMES[metric]


def _num(value: float | None, digits: int = 1) -> str:
    return "—" if value is None or math.isnan(value) else f"{value:.{digits}f}"


def _p(value: float) -> str:
    return "—" if math.isnan(value) else (f"{value:.3f}" if value >= 0.001 else f"{value:.1e}")


def _verdict(c: MetricComparison) -> str:
    if c.regression:
        return "**REGRESSION**"
    if c.improvement:
        return "improved"
    return "—" if math.isnan(c.p_holm) else "ok"


def _test_text(c: MetricComparison) -> str:
    if c.note:
        return c.note
    if c.test == "mcnemar":
        return f"McNemar −{c.lost}/+{c.gained}"
    unit = c.test.removesuffix("_bootstrap") + " " if c.test.endswith("_bootstrap") else ""
    return f"{unit}bootstrap CI [{_num(_scale(c.ci_low))}, {_num(_scale(c.ci_high))}]"


def _scale(value: float | None) -> float | None:
    return None if value is None else value * 100


def headline(
    comparisons: Sequence[MetricComparison], reason: str | None, max_drop: float, alpha: float
) -> str:
    """The one-line result."""
    if reason is not None:
        return f"not comparable: {reason}"
    bad = [c for c in comparisons if c.regression]
    if bad:
        worst = max(bad, key=lambda c: c.drop_points)
        return (
            f"REGRESSION in {len(bad)} of {len(comparisons)} comparisons; worst: {worst.task} "
            f"{metric_name(worst.metric)} {worst.delta_points:+.1f} points "
            f"(Holm p = {_p(worst.p_holm)})"
        )
    return (
        f"no regression ({len(comparisons)} comparisons; a drop counts above {max_drop:g} "
        f"points at Holm-adjusted p < {alpha:g})"
    )


def markdown_summary(
    base: ComparedRun,
    cand: ComparedRun,
    comparisons: Sequence[MetricComparison],
    reason: str | None,
    *,
    max_drop: float,
    alpha: float,
    n_boot: int,
    seed: int,
) -> str:
    """A Markdown summary for a CI job page (e.g. GitHub's $GITHUB_STEP_SUMMARY)."""
    if reason is not None:
        status = "⚠️ not comparable"
    elif any(c.regression for c in comparisons):
        status = "❌ regression"
    else:
        status = "✅ no regression"
    lines = [
        f"## AQUA-Bench regression check: {status}",
        "",
        headline(comparisons, reason, max_drop, alpha),
        "",
        f"- baseline: `{base.path}` ({base.label}; {base.harness})",
        f"- candidate: `{cand.path}` ({cand.label}; {cand.harness})",
    ]
    judged = any(c.metric.startswith(f"{JUDGE_METRIC},") for c in comparisons)
    aqua = any(not c.metric.startswith(f"{JUDGE_METRIC},") for c in comparisons)
    tests, legend = [], ["Values in %."]
    if aqua:
        tests.append(
            "exact McNemar on paired items (Ori, joint, unparsed); paired clip bootstrap for CA"
        )
        legend.append(
            "Ori = Solvable accuracy; CA = conditional accuracy (each run conditions on its own "
            "Solvable answers); joint = Solvable and variant both right; unparsed: lower is "
            "better. McNemar −lost/+gained counts the discordant items."
        )
    if judged:
        tests.append(
            "paired bootstrap of the mean ORCA judge score over items (over clips for AQUA items)"
        )
        legend.append(
            "ORCA judge = mean per-item judge correctness on [0, 1] (the run's `orca` figure), "
            "as %; the two runs were judged by the same checkpoint."
        )
    if reason is None:
        lines += [
            f"- rule: a regression is a drop of more than {max_drop:g} points that is significant "
            f"at α = {alpha:g} after Holm correction over all {len(comparisons)} comparisons",
            f"- tests: {'; '.join(tests)} ({n_boot} resamples, seed {seed})",
            "",
            "| task | metric | baseline | candidate | Δ points | n | test | p | p (Holm) | |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in comparisons:
            lines.append(
                f"| {c.task} | {metric_name(c.metric)} | {_num(_scale(c.baseline))} | "
                f"{_num(_scale(c.candidate))} | {_num(c.delta_points)} | {c.n} | "
                f"{_test_text(c)} | {_p(c.p_value)} | {_p(c.p_holm)} | {_verdict(c)} |"
            )
        lines += ["", " ".join(legend)]
    return "\n".join(lines) + "\n"


def comparison_record(c: MetricComparison) -> dict[str, Any]:
    """One comparison as a JSON-ready row (intervals in points, like the deltas)."""
    return {
        "task": c.task,
        "metric": c.metric,
        "test": c.test,
        "baseline": c.baseline,
        "candidate": c.candidate,
        "delta_points": c.delta_points,
        "n": c.n,
        "note": c.note,
        "lost": c.lost,
        "gained": c.gained,
        "ci_low_points": _scale(c.ci_low),
        "ci_high_points": _scale(c.ci_high),
        "p_value": c.p_value,
        "p_holm": c.p_holm,
        "regression": c.regression,
        "improvement": c.improvement,
    }
