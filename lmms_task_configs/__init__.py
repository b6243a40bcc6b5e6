"""lmms-eval task YAMLs of AQUA-Bench (see aqua_tasks.lmms_eval).

`_aqua_base` is written by hand; the track YAMLs are generated from task_configs/ by
scripts/generate_lmms_task_configs.py (a test fails when they drift).
"""
