"""`aqua`: AQUA-Bench's commands, one subcommand each (`aqua eval`, `aqua report`, …)."""

from __future__ import annotations

from collections.abc import Sequence

from eval_common.cli import dispatch

COMMANDS = {
    "eval": ("eval_plugins.cli.aqua_eval", "lm_eval with this package's tasks (lm_eval's flags)"),
    "demo": ("eval_plugins.cli.aqua_demo", "the built-in demo: own questions, three baselines"),
    "score": ("aqua_tasks.cli.score", "score saved replies again (any extractor)"),
    "report": ("aqua_tasks.cli.report", "the paper's table and charts from runs"),
    "regress": ("aqua_tasks.cli.regress", "gate a candidate run against a baseline run"),
    "build": ("aqua_tasks.cli.build", "AQUA variants of any multiple-choice audio benchmark"),
    "audio": ("aqua_tasks.cli.audio", "check or build the audio layout"),
    "open-judge-check": ("aqua_tasks.cli.open_judge_check", "is a judge fit for open-ended AQUA?"),
    "orca-items": ("aqua_tasks.cli.orca_items", "ORCA judge items from lm-eval samples"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `aqua`; returns the exit status."""
    return dispatch("aqua", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
