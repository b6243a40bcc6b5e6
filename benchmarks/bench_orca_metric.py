"""The ORCA judge inside an lm-eval run vs orca score's path on the same items, in one process.

orca score path: load the judge, score the items. lm-eval path: `orca_human` through
`simple_evaluate` with the `orca-replay` model (its answers are the items' candidates), the
judge loaded by the metric's pre-generation hook and scored once at aggregation. Reports the
judge's time in each (load + scoring), the overhead ratio, the whole run's wall time, and
items/s of scoring at the batch size.

    python benchmarks/bench_orca_metric.py --checkpoint runs/orca-multinomial \
        --items ../shared/data/orca-human/dev.jsonl [--limit 64] [--batch-size 16] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
import time
from pathlib import Path

from eval_common.cli import number_problem

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("HF_DATASETS_OFFLINE", "1")


class Stopwatch:
    """Total seconds spent inside wrapped callables."""

    def __init__(self) -> None:
        self.seconds = 0.0

    def wrap(self, fn):
        def timed(*args, **kwargs):
            start = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                self.seconds += time.perf_counter() - start

        return timed


def orca_score_path(checkpoint: str, items: Path, batch_size: int) -> dict[str, float]:
    from orca_judge import OrcaJudge
    from orca_judge.data import load_items

    records = load_items(items)
    start = time.perf_counter()
    judge = OrcaJudge.from_pretrained(checkpoint)
    loaded = time.perf_counter()
    preds = judge.score(records, batch_size=batch_size)
    done = time.perf_counter()
    mean = sum(p.clamped_unit for p in preds) / len(preds)
    return {
        "load_s": loaded - start,
        "score_s": done - loaded,
        "judge_s": done - start,
        "orca": mean,
    }


def lm_eval_path(checkpoint: str, items: Path, batch_size: int) -> dict[str, float]:
    import lm_eval
    from lm_eval.tasks import TaskManager

    from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
    from eval_plugins.lm_eval.registration import register_all
    from orca_judge import judge as judge_module

    # Each evaluation loads its judge in its own session: the load below is this run's.
    register_all()
    load_watch, score_watch = Stopwatch(), Stopwatch()
    cls = judge_module.OrcaJudge
    original_load, original_score = cls.__dict__["from_pretrained"], cls.score
    cls.from_pretrained = classmethod(load_watch.wrap(original_load.__func__))
    cls.score = score_watch.wrap(original_score)
    metadata = {
        "orca_data": str(items),
        "orca": {"checkpoint": checkpoint, "batch_size": batch_size},
    }
    try:
        start = time.perf_counter()
        results = lm_eval.simple_evaluate(
            model="orca-replay",
            model_args=f"path={items}",
            tasks=["orca_human"],
            # lm-eval hands metadata to the tasks only through the TaskManager it is given.
            task_manager=TaskManager(include_path=[str(task_config_dir())], metadata=metadata),
        )
        wall = time.perf_counter() - start
    finally:
        cls.from_pretrained = original_load
        cls.score = original_score
    got = results["results"]["orca_human"]
    return {
        "load_s": load_watch.seconds,
        "score_s": score_watch.seconds,
        "judge_s": load_watch.seconds + score_watch.seconds,
        "run_wall_s": wall,
        "orca": got["orca,none"],
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--checkpoint", required=True, help="ORCA judge checkpoint directory")
    parser.add_argument("--items", required=True, help="ORCA JSONL with candidates and ratings")
    parser.add_argument("--limit", type=int, default=64, help="first N items (0: all)")
    parser.add_argument("--batch-size", type=int, default=16, help="items per forward pass")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    args = parser.parse_args()
    for flag, value, low in (("--limit", args.limit, 0), ("--batch-size", args.batch_size, 1)):
        if problem := number_problem(flag, value, minimum=low):
            parser.error(problem)

    lines = [line for line in Path(args.items).read_text().splitlines() if line.strip()]
    if args.limit:
        lines = lines[: args.limit]
    items = Path(tempfile.mkdtemp(prefix="bench-orca-metric-")) / "items.jsonl"
    items.write_text("\n".join(lines) + "\n")

    # Warm-up (first forward pass, lazy imports) so that neither path pays it.
    warm = items.with_name("warm.jsonl")
    warm.write_text("\n".join(lines[:4]) + "\n")
    orca_score_path(args.checkpoint, warm, args.batch_size)
    alone = orca_score_path(args.checkpoint, items, args.batch_size)
    inside = lm_eval_path(args.checkpoint, items, args.batch_size)
    n = len(lines)
    report = {
        "items": n,
        "batch_size": args.batch_size,
        "orca_score": alone,
        "lm_eval": inside,
        "judge_overhead_ratio": inside["judge_s"] / alone["judge_s"],
        "items_per_s_orca_score": n / alone["score_s"],
        "items_per_s_lm_eval": n / inside["score_s"],
        "same_mean": abs(alone["orca"] - inside["orca"]) < 1e-6,
    }
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{n} items, batch {args.batch_size}; same mean orca: {report['same_mean']}")
    for name in ("orca_score", "lm_eval"):
        r = report[name]
        print(
            f"{name:10s} load {r['load_s']:.2f} s  score {r['score_s']:.2f} s  "
            f"({n / r['score_s']:.2f} items/s)"
        )
    print(f"lm-eval run wall time {inside['run_wall_s']:.2f} s")
    print(f"judge time inside lm-eval / orca score: {report['judge_overhead_ratio']:.2f}x")


if __name__ == "__main__":
    main()
