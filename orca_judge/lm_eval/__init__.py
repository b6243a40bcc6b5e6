"""ORCA in lm-evaluation-harness: the `orca` metric, its doc-aware wiring and the human task.

Modules: `metric` (`orca`, `orca_aggregate`), `task_wiring` (one built task wired for the
doc-aware metric, shared with lmms-eval), `wiring` (the doc-aware form in lm-eval), `human`
(the orca_human task and the orca-replay model) and `compat` (every lm-eval internal relied
on). The harness-neutral half (settings, payloads, judge passes, per-item files) is
`orca_judge.metric`, which imports no harness.
"""
