"""The plugin edge: everything both packages add to lm-eval and lmms-eval, and every harness
internal they rely on, in one place per harness.

A layer above `aqua_tasks` and `orca_judge`: it imports their adapters and core; nothing in
them imports it except their command-line modules. Outside this package no module touches a
private name of a harness or assigns a harness attribute (`tests/architecture` enforces it).

- `names`: the one table name -> "module:attribute" of our models, metrics, aggregations and
  task folders, per harness (pyproject's entry points and every list read it);
- `seams`: how each patch is gated on the exact tested harness version;
- `startup_hook`: the `.pth` start-up hook that hands harness modules to the plugins below;
- `orca_wiring`: the doc-aware `metric: orca` wired into a built task (both harnesses);
- `lm_eval/`: `compat` (every lm-eval internal), `registration`, `plugin` (start-up hook
  callbacks), `metric` (`metric: orca`), `cli_run` and `harness_errors` (the command-line run);
- `lmms_eval/`: `compat` (every lmms-eval internal), `plugin`, `metric`, `manifests`.
"""
