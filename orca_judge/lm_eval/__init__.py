"""ORCA in lm-evaluation-harness: the `orca` metric, its settings, judge passes and the human task.

Modules: `settings` (metric-entry settings), `payloads` (what one doc hands the judge),
`judge_pass` (the judges and passes of one evaluation), `metric` (`orca`, `orca_aggregate`),
`per_item` (per-item judge results beside lm-eval's samples), `results` (reading them back),
`samples` (lm-eval samples as orca-score input), `wiring` (the doc-aware form), `human` (the
orca_human task and the orca-replay model) and `compat` (every lm-eval version-specific
shim). Only this package imports lm_eval; `settings`, `payloads`, `per_item`, `results` and
`samples` do not, so reading results needs no harness.
"""
