"""The harness-neutral half of `metric: orca`: settings, payloads, judge passes, per-item files.

Imports no harness; the adapters in `orca_judge.lm_eval` and `orca_judge.lmms_eval` wrap it.
"""
