"""Checkpoint directories: the one place that writes and reads them, and builds models from them.

Every write goes through here: a full save (`save_model` / `write_checkpoint`, one atomic
directory swap that keeps the folder's other files; a non-empty folder that is not a checkpoint
is refused unless `overwrite`) and the later in-place updates of the config and metrics
(`update_config`, `update_metrics`, each an atomic file replace through `eval_common.outputs`).
Every load goes through `load_model`.
Modules: `atomic` (atomic folders and their clean-up), `native` (our layout), `published_format`
(reading the authors' layout), `published` (recognising their judges, and the clamp),
`adapter_keys` (matching saved LoRA weights to the backbone), `loading` (building a model),
`ensemble` (a folder of several judges scored as one; imported on its own, as it builds on
`orca_judge.judge`).
"""

from orca_judge.checkpoint.atomic import (
    atomic_dir,
    atomic_write_json,
    atomic_write_text,
    clean_interrupted,
    clean_temporary_files,
    recover_interrupted,
)
from orca_judge.checkpoint.contents import CheckpointContents, read_tensors, recorded_settings
from orca_judge.checkpoint.loading import (
    LoadedModel,
    load_adapter,
    load_model,
    read_checkpoint,
)
from orca_judge.checkpoint.native import (
    ENSEMBLE_FILE,
    save_model,
    update_config,
    update_metrics,
    write_checkpoint,
)
from orca_judge.checkpoint.published import ClampChoice

__all__ = [
    "ENSEMBLE_FILE",
    "CheckpointContents",
    "ClampChoice",
    "LoadedModel",
    "atomic_dir",
    "atomic_write_json",
    "atomic_write_text",
    "clean_interrupted",
    "clean_temporary_files",
    "load_adapter",
    "load_model",
    "read_checkpoint",
    "read_tensors",
    "recorded_settings",
    "recover_interrupted",
    "save_model",
    "update_config",
    "update_metrics",
    "write_checkpoint",
]
