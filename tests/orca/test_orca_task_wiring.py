"""The harness-neutral task wiring reads task metadata in both harnesses' forms."""

from eval_plugins.orca_wiring import metadata_settings, with_record


def test_metadata_as_a_mapping_or_an_lmms_eval_list_of_mappings():
    assert metadata_settings({"orca": {"device": "cpu"}}) == {"orca": {"device": "cpu"}}
    listed = [{"version": 0.0}, {"orca": {"device": "cpu"}}, "note"]
    assert metadata_settings(listed) == {"version": 0.0, "orca": {"device": "cpu"}}
    assert metadata_settings(None) == {} and metadata_settings("free text") == {}


def test_the_judge_record_keeps_the_metadata_form():
    assert with_record({"version": 1}, "orca_inputs", {"a": 1}) == {
        "version": 1,
        "orca_inputs": {"a": 1},
    }
    assert with_record([{"version": 1}], "orca_inputs", {"a": 1}) == [
        {"version": 1},
        {"orca_inputs": {"a": 1}},
    ]
    assert with_record(None, "orca_inputs", {}) == {"orca_inputs": {}}
