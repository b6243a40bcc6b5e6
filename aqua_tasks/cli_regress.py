"""`aqua-regress`: a CI gate comparing a candidate run with a baseline run, item by item."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from tqdm import tqdm

from aqua_tasks.cli_score import score_replies
from aqua_tasks.data import AquaDataError
from aqua_tasks.lm_eval_task import audio_enabled
from aqua_tasks.regress import MIN_CA_CLIPS, MetricComparison, compare_task, judge
from aqua_tasks.replies import SavedReply, iter_tasks, read_replies
from aqua_tasks.report import RunReadError, newest_results_file, read_json, run_label
from aqua_tasks.scoring import metric_value

EXIT_OK, EXIT_REGRESSION, EXIT_NOT_COMPARABLE = 0, 1, 2
# Manifest fields that must match; package_version and the file name may differ.
COMPARED_MANIFEST = (
    "track",
    "variant",
    "prompt_style",
    "prompt_sha256",
    "data_sha256",
    "extractor",
    "extractor_version",
)
# Doc fields that depend on the machine, not on the question (audio is checked on its own).
LOCAL_DOC_FIELDS = frozenset({"audio_path", "audio_error", "package_version", "data_file"})
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
SCORE_CHUNK = 500


@dataclass(frozen=True)
class SampleRecord:
    """What lm-eval logged about one item besides the reply: hashes and the doc."""

    prompt_hash: str | None
    doc_hash: str | None
    doc: Mapping


@dataclass(frozen=True)
class Run:
    """A run's replies with what is needed to tell whether two runs are comparable."""

    path: Path
    label: str
    replies: list[SavedReply]
    samples: dict[tuple[str, int], SampleRecord]
    audio: dict[str, bool]


def _sample_records(replies: Sequence[SavedReply]) -> dict[tuple[str, int], SampleRecord]:
    # SavedReply.source is "<file>:<line>" for lm-eval samples; re-read those lines' hashes.
    by_file: dict[str, dict[int, tuple[str, int]]] = {}
    for r in replies:
        file, _, line = r.source.rpartition(":")
        if file.endswith(".jsonl") and line.isdigit():
            by_file.setdefault(file, {})[int(line)] = (r.task, r.item.id)
    records: dict[tuple[str, int], SampleRecord] = {}
    for file, wanted in by_file.items():
        with open(file, encoding="utf-8") as handle:
            for line_no, line in enumerate(handle, 1):
                if line_no in wanted:
                    sample = json.loads(line)
                    records[wanted[line_no]] = SampleRecord(
                        sample.get("prompt_hash"), sample.get("doc_hash"), sample.get("doc") or {}
                    )
    return records


def load_run(path: Path) -> Run:
    """Replies, logged hashes, label and audio mode of a run folder or samples file."""
    replies = read_replies(path)
    label, audio = path.name, {}
    if path.is_dir():
        try:
            results_file, _ = newest_results_file(path)
        except RunReadError:
            results_file = None
        if results_file is not None:
            results = read_json(results_file)
            label = run_label(results.get("config") or {})
            configs = results.get("configs") or {}
            audio = {
                task: audio_enabled((cfg or {}).get("metadata") or {})
                for task, cfg in configs.items()
            }
    return Run(path, label, replies, _sample_records(replies), audio)


def _setting(reply: SavedReply, field: str) -> object:
    if field == "extractor":
        return reply.extractor or reply.manifest.get("extractor") or "mmau"
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


def why_not_comparable(base: Run, cand: Run) -> str | None:
    """The first reason the two runs cannot be compared item by item, or None."""
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
        keys = [(task, i) for i in b]
        both = [k for k in keys if k in base.samples and k in cand.samples]
        prompts = [
            k
            for k in both
            if base.samples[k].prompt_hash != cand.samples[k].prompt_hash
            and base.samples[k].prompt_hash is not None
        ]
        if prompts:
            return (
                f"{task}: prompt differs (lm-eval prompt_hash; {_example(prompts)}) — "
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
            return (
                f"{task}: questions differ (lm-eval doc_hash; fields {', '.join(sorted(fields))}; "
                f"{_example(docs)})"
            )
    return None


def _values(replies: list[SavedReply], progress: tqdm) -> list[dict]:
    out = []
    for start in range(0, len(replies), SCORE_CHUNK):
        chunk = replies[start : start + SCORE_CHUNK]
        verdicts = score_replies(chunk, extractor=None, exclude_defective=False)
        out.extend(metric_value(v) for v in verdicts)
        progress.update(len(chunk))
    return out


def compare_runs(
    base: Run, cand: Run, *, n_boot: int, seed: int, min_ca_clips: int, progress: bool = True
) -> list[MetricComparison]:
    """Unadjusted comparisons of every tested metric of every task, in task order."""
    base_tasks = dict(iter_tasks(base.replies))
    cand_tasks = dict(iter_tasks(cand.replies))
    comparisons: list[MetricComparison] = []
    total = len(base.replies) + len(cand.replies)
    with tqdm(total=total, desc="scoring", unit="item", disable=not progress) as bar:
        for task in sorted(base_tasks):
            comparisons += compare_task(
                task,
                _values(base_tasks[task], bar),
                _values(cand_tasks[task], bar),
                n_boot=n_boot,
                seed=seed,
                min_ca_clips=min_ca_clips,
            )
    return comparisons


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
    return f"bootstrap CI [{_num(_scale(c.ci_low))}, {_num(_scale(c.ci_high))}]"


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
            f"{METRIC_NAMES[worst.metric]} {worst.delta_points:+.1f} points "
            f"(Holm p = {_p(worst.p_holm)})"
        )
    return (
        f"no regression ({len(comparisons)} comparisons; a drop counts above {max_drop:g} "
        f"points at Holm-adjusted p < {alpha:g})"
    )


def markdown_summary(
    base: Run,
    cand: Run,
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
        f"- baseline: `{base.path}` ({base.label})",
        f"- candidate: `{cand.path}` ({cand.label})",
    ]
    if reason is None:
        lines += [
            f"- rule: a regression is a drop of more than {max_drop:g} points that is significant "
            f"at α = {alpha:g} after Holm correction over all {len(comparisons)} comparisons",
            f"- tests: exact McNemar on paired items (Ori, joint, unparsed); paired clip "
            f"bootstrap for CA ({n_boot} resamples, seed {seed})",
            "",
            "| task | metric | baseline | candidate | Δ points | n | test | p | p (Holm) | |",
            "|---|---|---|---|---|---|---|---|---|---|",
        ]
        for c in comparisons:
            lines.append(
                f"| {c.task} | {METRIC_NAMES[c.metric]} | {_num(_scale(c.baseline))} | "
                f"{_num(_scale(c.candidate))} | {_num(c.delta_points)} | {c.n} | "
                f"{_test_text(c)} | {_p(c.p_value)} | {_p(c.p_holm)} | {_verdict(c)} |"
            )
        lines += [
            "",
            "Values in %. Ori = Solvable accuracy; CA = conditional accuracy (each run "
            "conditions on its own Solvable answers); joint = Solvable and variant both right; "
            "unparsed: lower is better. McNemar −lost/+gained counts the discordant items.",
        ]
    return "\n".join(lines) + "\n"


def _json_num(value: float | None) -> float | None:
    return None if value is None or math.isnan(value) else value


def build_parser() -> argparse.ArgumentParser:
    """Command-line options of aqua-regress."""
    parser = argparse.ArgumentParser(
        prog="aqua-regress",
        description=(
            "Compare a candidate run of AQUA tasks with a baseline run item by item (from "
            "lm-eval --log_samples output). Exit 0: no regression; 1: a metric dropped by more "
            "than --max-drop points, significant after Holm correction; 2: the runs are not "
            "comparable (tasks, items, variant, extractor, prompt, audio) or input is bad."
        ),
    )
    parser.add_argument("--baseline", required=True, type=Path, help="baseline run folder/file")
    parser.add_argument("--candidate", required=True, type=Path, help="candidate run folder/file")
    parser.add_argument(
        "--max-drop",
        type=float,
        default=1.0,
        metavar="POINTS",
        help="largest tolerated drop in percentage points (default: %(default)s)",
    )
    parser.add_argument(
        "--alpha", type=float, default=0.05, help="significance level (default: %(default)s)"
    )
    parser.add_argument(
        "--seed", type=int, default=0, help="seed of the bootstrap (default: %(default)s)"
    )
    parser.add_argument(
        "--n-boot",
        type=int,
        default=5000,
        metavar="N",
        help="bootstrap resamples for CA (default: %(default)s)",
    )
    parser.add_argument(
        "--min-ca-clips",
        type=int,
        default=MIN_CA_CLIPS,
        metavar="N",
        help="test a CA only when both runs condition it on at least N clips "
        "(default: %(default)s)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    parser.add_argument(
        "--summary",
        type=Path,
        metavar="OUT.md",
        help="also write the Markdown summary here (e.g. $GITHUB_STEP_SUMMARY; appended to)",
    )
    parser.add_argument("--no-progress", action="store_true", help="hide progress bars")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point: 0 no regression, 1 regression, 2 not comparable or bad input."""
    args = build_parser().parse_args(argv)
    if args.max_drop < 0 or not 0 < args.alpha < 1 or args.n_boot < 1:
        print(
            "aqua-regress: error: need --max-drop >= 0, 0 < --alpha < 1 and --n-boot >= 1",
            file=sys.stderr,
        )
        return EXIT_NOT_COMPARABLE
    try:
        base = load_run(args.baseline)
        cand = load_run(args.candidate)
    except (AquaDataError, RunReadError, OSError, json.JSONDecodeError) as error:
        print(f"aqua-regress: error: {error}", file=sys.stderr)
        return EXIT_NOT_COMPARABLE
    reason = why_not_comparable(base, cand)
    comparisons: list[MetricComparison] = []
    if reason is None:
        comparisons = judge(
            compare_runs(
                base,
                cand,
                n_boot=args.n_boot,
                seed=args.seed,
                min_ca_clips=args.min_ca_clips,
                progress=not args.no_progress,
            ),
            max_drop=args.max_drop,
            alpha=args.alpha,
        )
    summary = markdown_summary(
        base,
        cand,
        comparisons,
        reason,
        max_drop=args.max_drop,
        alpha=args.alpha,
        n_boot=args.n_boot,
        seed=args.seed,
    )
    if args.summary:
        args.summary.parent.mkdir(parents=True, exist_ok=True)
        with args.summary.open("a", encoding="utf-8") as handle:
            handle.write(summary)
    if reason is not None:
        code = EXIT_NOT_COMPARABLE
    else:
        code = EXIT_REGRESSION if any(c.regression for c in comparisons) else EXIT_OK
    if args.json:
        payload = {
            "status": {0: "ok", 1: "regression", 2: "not comparable"}[code],
            "reason": reason,
            "baseline": {"path": str(base.path), "label": base.label},
            "candidate": {"path": str(cand.path), "label": cand.label},
            "settings": {
                "max_drop": args.max_drop,
                "alpha": args.alpha,
                "seed": args.seed,
                "n_boot": args.n_boot,
                "min_ca_clips": args.min_ca_clips,
            },
            "comparisons": [
                {
                    "task": c.task,
                    "metric": c.metric,
                    "test": c.test,
                    "baseline": _json_num(c.baseline),
                    "candidate": _json_num(c.candidate),
                    "delta_points": _json_num(c.delta_points),
                    "n": c.n,
                    "note": c.note,
                    "lost": c.lost,
                    "gained": c.gained,
                    "ci_low_points": _json_num(_scale(c.ci_low)),
                    "ci_high_points": _json_num(_scale(c.ci_high)),
                    "p_value": _json_num(c.p_value),
                    "p_holm": _json_num(c.p_holm),
                    "regression": c.regression,
                    "improvement": c.improvement,
                }
                for c in comparisons
            ],
        }
        print(json.dumps(payload, indent=2))
    elif reason is None:
        print(summary)
    line = headline(comparisons, reason, args.max_drop, args.alpha)
    # stdout stays pure JSON with --json; failures go to stderr, where CI logs show them.
    print(f"aqua-regress: {line}", file=sys.stderr if code or args.json else sys.stdout)
    return code


if __name__ == "__main__":
    sys.exit(main())
