"""`python -m aqua_tasks.lmms_eval --include-path`; the command is cli/lmms_include_path.py."""

from aqua_tasks.cli.lmms_include_path import main

if __name__ == "__main__":
    raise SystemExit(main())
