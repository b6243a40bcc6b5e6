"""`python -m aqua_tasks.cli.tiny_audio_lm OUT_DIR [--omni | --chat]`: write a tiny random model."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from aqua_tasks.testing import tiny_audio_lm
from aqua_tasks.testing.tiny_audio_lm import (
    build_tiny_audio_lm,
    build_tiny_chat_lm,
    build_tiny_omni_thinker,
)


def build_parser() -> argparse.ArgumentParser:
    """The tiny model builder's argument parser."""
    parser = argparse.ArgumentParser(description=tiny_audio_lm.__doc__.split("\n")[0])
    parser.add_argument("out_dir", help="folder to write the model and processor to")
    parser.add_argument("--seed", type=int, default=0, help="weight initialisation seed")
    kind = parser.add_mutually_exclusive_group()
    kind.add_argument(
        "--omni", action="store_true", help="a Qwen2.5-Omni thinker instead of Qwen2-Audio"
    )
    kind.add_argument(
        "--chat",
        action="store_true",
        help="a text-only chat model (for a dry run of aqua-build --iaqd hf)",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Command line: write the tiny model to a folder."""
    args = build_parser().parse_args(argv)
    if args.chat:
        build = build_tiny_chat_lm
    else:
        build = build_tiny_omni_thinker if args.omni else build_tiny_audio_lm
    print(build(args.out_dir, args.seed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
