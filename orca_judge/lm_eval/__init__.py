"""ORCA in lm-evaluation-harness: the human-rated task and the model replaying its answers.

Module `human` (the orca_human task and the orca-replay model), on lm-eval's public API. The
metric as lm-eval sees it (`metric: orca`, its doc-aware wiring, every lm-eval internal relied
on) is the plugin edge's (`eval_plugins.lm_eval`); the harness-neutral half (settings,
payloads, judge passes, per-item files) is `orca_judge.metric`, which imports no harness.
"""
