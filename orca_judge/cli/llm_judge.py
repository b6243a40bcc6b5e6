"""orca llm-judge: rate answers 1-5 with a prompted LLM judge; agreement when items are rated."""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import asdict

from eval_common.cli import add_json_flag, add_progress_flag, command, fail
from eval_common.jsonio import write_jsonl
from eval_common.outputs import check_output_file

PROG = "orca llm-judge"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog=PROG, description=__doc__)
    parser.add_argument(
        "--input", required=True, help="items to rate (.jsonl / .json, as orca score)"
    )
    parser.add_argument("--output", help="write one judgement per line (JSONL) here")
    parser.add_argument(
        "--judge",
        required=True,
        metavar="KEY=VALUE,...",
        help="the judge's settings, e.g. base_url=http://localhost:8000/v1/chat/completions,"
        "model=NAME (also api_key_env, backend=hf with model=FOLDER, max_attempts, "
        "max_retries, timeout, concurrency, cache, cache_dir); see docs/llm_judge.md",
    )
    add_json_flag(parser, "print judgements, summary and agreement report as one JSON object")
    add_progress_flag(parser, "hide the progress bar")
    return parser


@command(PROG)
def main(argv: list[str] | None = None) -> int:
    from orca_judge.data import load_items
    from orca_judge.errors import LlmJudgeError
    from orca_judge.prompted.comparison import judgement_report
    from orca_judge.prompted.judge import PromptedJudge
    from orca_judge.prompted.settings import build_settings, parse_spec

    args = build_parser().parse_args(argv)
    try:
        settings = build_settings(parse_spec(args.judge, "--judge"), "--judge")
        if args.output:
            check_output_file(args.output, inputs=[args.input], flag="--output")
        items = load_items(args.input)
    except (LlmJudgeError, ValueError) as err:
        return fail(PROG, str(err))
    judge = PromptedJudge(settings)
    try:
        judged = judge.score([asdict(i) for i in items], progress_bar=not args.no_progress)
    finally:
        judge.close()
    rows = [j.to_dict() for j in judged]
    report = {
        "judge": judge.describe(),
        "stats": vars(judge.stats),
        **judgement_report(judged, items),
    }
    print(f"{PROG}: {judge.summary()}", file=sys.stderr)
    judge.print_failures(judged)
    if args.output:
        write_jsonl(args.output, rows)
    if args.json:
        print(json.dumps({"judgements": rows, "report": report}, indent=2))
        return 0
    if not args.output:
        for r in rows:
            print(f"{r['id']}\t{r['rating'] if r['rating'] is not None else 'failed'}")
    print(
        f"rated {report['rated']} of {len(rows)} items ({report['failed']} failed judgements); "
        f"mean normalised rating {report['mean_unit']:.3f}"
    )
    if "agreement" in report:
        m = report["agreement"]
        figures = f"rho {m['rho']:.3f}  tau {m['tau']:.3f}  MAE_mu {m['mae_mu']:.3f}"
        print(f"agreement (n={m['n']}): {figures}")
    return 0
