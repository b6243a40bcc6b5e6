"""`orca`: the ORCA judge's commands, one subcommand each (`orca train`, `orca score`, …)."""

from __future__ import annotations

from collections.abc import Sequence

from eval_common.cli import dispatch

COMMANDS = {
    "train": ("orca_judge.cli.train", "train a judge on human ratings (a YAML recipe or flags)"),
    "score": ("orca_judge.cli.score", "score candidate answers with a judge"),
    "compare": ("orca_judge.cli.compare", "learned and prompted judges on the same human items"),
    "llm-judge": ("orca_judge.cli.llm_judge", "score candidates with a prompted chat model"),
    "ensemble": ("orca_judge.cli.ensemble", "several judges in one folder, loaded as one"),
    "average": ("orca_judge.cli.average", "one judge whose weights average several judges'"),
    "synthesize": ("orca_judge.cli.synthesize", "rule-rated candidates for a training stage"),
    "fetch-ratings": ("orca_judge.cli.fetch_ratings", "download the ORCA human ratings"),
    "backbone": ("orca_judge.cli.backbone", "build a local backbone folder from a GGUF package"),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `orca`; returns the exit status."""
    return dispatch("orca", COMMANDS, argv)


if __name__ == "__main__":
    raise SystemExit(main())
