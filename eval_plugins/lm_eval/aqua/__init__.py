"""The lm-evaluation-harness adapter: task class, task folder, results fix-up, user task files,
the demo. lm-eval's public API only; registration, the start-up plugin and the command-line run
are the plugin edge's (`eval_plugins.lm_eval`). Imported by `cli/` and the edge only.
"""
