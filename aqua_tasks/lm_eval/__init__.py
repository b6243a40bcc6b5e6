"""The lm-evaluation-harness adapter: task class and YAML functions, results fix-up, registration,
the command-line run, the start-up plugin. A leaf: only `cli/` and the start-up hook import it.
"""
