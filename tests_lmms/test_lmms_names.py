"""lmms-eval reads every lmms-eval model of the name table through our one entry point."""

from __future__ import annotations

from importlib.metadata import entry_points

from eval_plugins.names import LMMS_EVAL, LMMS_MANIFESTS, dotted, load, targets


def test_the_entry_point_s_manifests_are_the_table_s_models_and_their_classes_load():
    from lmms_eval.api.model import lmms

    (point,) = [p for p in entry_points(group="lmms_eval.models") if p.name == LMMS_MANIFESTS[0]]
    assert point.value == LMMS_MANIFESTS[1]
    manifests = point.load()
    table = targets(LMMS_EVAL, "models")
    assert [m.model_id for m in manifests] == list(table)
    for manifest, target in zip(manifests, table.values(), strict=True):
        assert manifest.simple_class_path == dotted(target)
        assert issubclass(load(target), lmms)
