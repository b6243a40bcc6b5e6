"""lmms-eval task YAMLs of AQUA-Bench (see eval_plugins.lmms_eval.aqua).

`_aqua_base` is written by hand; the track YAMLs are generated from task_configs/ by
scripts/generate_lmms_task_configs.py (a test fails when they drift).
"""
