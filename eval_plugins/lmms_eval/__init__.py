"""The lmms-eval edge of both packages: the start-up plugin, `metric: orca`, the model
manifests lmms-eval's entry point reads, and `compat`, every lmms-eval internal relied on.
Imported only where lmms-eval is installed (scripts/install-lmms-eval-env.sh)."""
