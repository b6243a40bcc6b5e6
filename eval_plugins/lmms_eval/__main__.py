"""`python -m eval_plugins.lmms_eval --include-path`: the lmms-eval task folder.

The command is `eval_plugins/cli/lmms_include_path.py`.
"""

from eval_plugins.cli.lmms_include_path import main

if __name__ == "__main__":
    raise SystemExit(main())
