"""lmms-eval's `lmms_eval.models` entry point: every model this plugin adds, as manifests.

Read from `eval_plugins.names` (both packages' lmms-eval models). Class paths are strings, so
lmms-eval imports a model's module only when it is used.
"""

from __future__ import annotations

from lmms_eval.models.registry_v2 import ModelManifest

from eval_plugins.names import LMMS_EVAL, dotted, targets

MANIFESTS: tuple[ModelManifest, ...] = tuple(
    ModelManifest(model_id=name, simple_class_path=dotted(target))
    for name, target in targets(LMMS_EVAL, "models").items()
)
