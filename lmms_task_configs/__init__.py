"""lmms-eval task YAMLs of AQUA-Bench (see aqua_tasks.lmms_eval)."""
