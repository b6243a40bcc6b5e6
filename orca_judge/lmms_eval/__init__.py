"""ORCA in lmms-eval: `metric: orca` in lmms-eval task YAMLs, and a model replaying answers.

Modules: `compat` (every lmms-eval version-specific shim), `metric` (the metric, its
aggregation and the doc-aware wiring, reusing `orca_judge.lm_eval`'s harness-neutral
settings, payloads, judge passes and per-item files), `models` (the entry-point manifests
lmms-eval reads) and `replay` (the `orca-replay` model). Only this package imports lmms_eval.
"""
