"""The plugin edge: one adapter per harness, holding everything both packages add to it and
every harness internal they rely on.

A layer above `aqua_tasks` and `orca_judge`: it imports them; nothing in them imports it except
their command-line modules. Outside this package no module touches a private name of a harness
or assigns a harness attribute (`tests/architecture` enforces it).

- `names`: the one table name -> "module:attribute" of our models, metrics, aggregations and
  task folders, per harness (pyproject's entry points and every list read it);
- `seams`: how each patch is gated on the harness versions it was tested with;
- `startup_hook`: the `.pth` start-up hook that hands harness modules to the adapters below;
- `orca_wiring`, `built_tasks`: what both adapters share (the doc-aware judge metrics wired
  into a built task; the private task tables both harnesses keep);
- `lm_eval/`: `compat` (every lm-eval internal), `registration` (`register_all`, the Python
  API's one call), `plugin`, `metric`, `judge_scorers` (0.5), `cli_run`, `harness_errors`,
  `orca_human`, `aqua/` (the AQUA task class, scorer, task folder, results, demo);
- `lmms_eval/`: `compat` (every lmms-eval internal), `plugin`, `metric`, `manifests`,
  `orca_replay`, `aqua/` (task functions, model classes, run checks).

Neither adapter imports the other.
"""
