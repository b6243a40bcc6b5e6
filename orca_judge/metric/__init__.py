"""The harness-neutral half of `metric: orca`: settings, payloads, judge passes, per-item files.

Imports no harness; the adapters in `eval_plugins.lm_eval` and `eval_plugins.lmms_eval` wrap it.
"""
