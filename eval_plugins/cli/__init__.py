"""The harness-facing commands: `aqua eval`, `aqua demo` and lmms-eval's task folder.

They sit in the plugin edge because they start a harness with both packages registered; the
commands of each package alone are `aqua_tasks.cli` and `orca_judge.cli`.
"""
