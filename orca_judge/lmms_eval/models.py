"""Model manifests for lmms-eval's `lmms_eval.models` entry-point group (no heavy imports).

lmms-eval's command line resolves models only through this group; the class is imported
when the model is asked for.
"""

from __future__ import annotations

from lmms_eval.models.registry_v2 import ModelManifest

ORCA_REPLAY = ModelManifest(
    model_id="orca-replay", simple_class_path="orca_judge.lmms_eval.replay.OrcaReplayLMMS"
)
