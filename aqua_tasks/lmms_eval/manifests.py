"""lmms-eval's `lmms_eval.models` entry point: this package's model names and classes.

Class paths are strings, so lmms-eval imports a model's module only when it is used.
"""

from __future__ import annotations

from lmms_eval.models.registry_v2 import ModelManifest

_MODULE = "aqua_tasks.lmms_eval.models"
# lmms-eval model name → class in `aqua_tasks.lmms_eval.models`; the lm-eval models' names.
CLASSES: dict[str, str] = {
    "aqua-audiolm": "AudioLMLmms",
    "aqua-replay": "ReplayLmms",
    "aqua-always-reject": "AlwaysRejectLmms",
    "aqua-first-option": "FirstOptionLmms",
    "aqua-random": "RandomOptionLmms",
}
MANIFESTS: tuple[ModelManifest, ...] = tuple(
    ModelManifest(model_id=name, simple_class_path=f"{_MODULE}.{cls}")
    for name, cls in CLASSES.items()
)
