"""The lm-evaluation-harness edge of both packages: registration, the start-up plugin, the
command-line run, `metric: orca`, and `compat`, every lm-eval internal relied on."""
