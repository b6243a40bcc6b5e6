"""`python -m eval_plugins.lmms_eval --include-path`: print the folder lmms-eval should index."""

from __future__ import annotations

import argparse
from collections.abc import Sequence

from eval_common.cli import command
from eval_plugins.lmms_eval.aqua import include_path

PROG = "python -m eval_plugins.lmms_eval"  # the documented way in; its __main__ calls main()


def build_parser() -> argparse.ArgumentParser:
    """The include-path command's argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG, description="Where this package's lmms-eval task YAMLs are installed."
    )
    parser.add_argument(
        "--include-path",
        action="store_true",
        required=True,
        help="print the folder to pass to `lmms-eval --include_path`",
    )
    return parser


@command(PROG)
def main(argv: Sequence[str] | None = None) -> int:
    """Print the installed AQUA task folder for `lmms-eval --include_path`."""
    build_parser().parse_args(argv)
    print(include_path())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
