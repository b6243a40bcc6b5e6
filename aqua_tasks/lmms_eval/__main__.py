"""`python -m aqua_tasks.lmms_eval --include-path`: print the folder lmms-eval should index."""

from __future__ import annotations

import argparse

from aqua_tasks.lmms_eval import include_path


def main(argv: list[str] | None = None) -> int:
    """Print the installed AQUA task folder for `lmms-eval --include_path`."""
    parser = argparse.ArgumentParser(
        prog="python -m aqua_tasks.lmms_eval",
        description="Where this package's lmms-eval task YAMLs are installed.",
    )
    parser.add_argument(
        "--include-path",
        action="store_true",
        required=True,
        help="print the folder to pass to `lmms-eval --include_path`",
    )
    parser.parse_args(argv)
    print(include_path())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
