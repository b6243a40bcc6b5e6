"""ORCA in lmms-eval: the model replaying saved answers (`replay`, `orca-replay`).

`metric: orca` in lmms-eval task YAMLs, the entry-point manifests lmms-eval reads and every
lmms-eval internal relied on are the plugin edge's (`eval_plugins.lmms_eval`).
"""
