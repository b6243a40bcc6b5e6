"""Bad input: clear errors naming the file, entry and field — or counted outcomes, never crashes."""

from __future__ import annotations

import json

import pytest

from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.data import load_items, parse_items, track_file
from aqua_tasks.core.extract import get_extractor_name
from aqua_tasks.core.scoring import unpack_outcome
from aqua_tasks.errors import AquaDataError
from aqua_tasks.task.definition import build_docs, process_results


def _entries(released_dir, n=8):
    with (released_dir / "AQUA-Bench-Animal-Sounds-Track.json").open() as handle:
        return json.load(handle)[:n]


def _write(tmp_path, name, payload) -> str:
    path = tmp_path / name
    path.write_text(payload if isinstance(payload, str) else json.dumps(payload))
    return str(path)


def test_missing_data_dir_names_the_setting_and_where_to_get_the_files(tmp_path):
    with pytest.raises(AquaDataError, match=r"no data_dir given.*authors' public repository"):
        track_file(None, "animal")
    with pytest.raises(AquaDataError, match=r"AQUA-Bench-Vocal-Sounds-Track\.json not found"):
        track_file(tmp_path, "vocal")


def test_unknown_track_and_extractor_list_the_valid_choices(released_dir):
    with pytest.raises(AquaDataError, match=r"unknown track 'speech'.*animal, music, vocal"):
        load_items(released_dir, "speech")
    with pytest.raises(ValueError, match=r"mmau.*official"):
        get_extractor_name("bogus")
    with pytest.raises(ValueError, match="bogus"):
        build_docs("animal", data_dir=str(released_dir), extractor="bogus")


def test_entry_errors_name_the_source_entry_and_field(released_dir):
    entries = _entries(released_dir)
    del entries[2]["options"]
    with pytest.raises(AquaDataError, match=r"f\.json: entry 2: missing key\(s\) options"):
        parse_items(entries, track="animal", variant="main", source="f.json")
    entries = _entries(released_dir)
    entries[1]["answer"] = "Giraffe"
    with pytest.raises(AquaDataError, match="entry 1: field 'answer' 'Giraffe' is not one of"):
        parse_items(entries, track="animal", variant="main", source="f.json")
    entries = _entries(released_dir)
    entries[5]["id"] = entries[0]["id"]
    with pytest.raises(AquaDataError, match="entry 5: duplicate id 0 \\(first at entry 0\\)"):
        parse_items(entries, track="animal", variant="main", source="f.json")
    entries = _entries(released_dir)
    entries[3]["type"] = "Unsolvable"
    with pytest.raises(AquaDataError, match="entry 3: field 'type' is 'Unsolvable'"):
        parse_items(entries, track="animal", variant="main", source="f.json")


def test_aqua_score_rejects_malformed_files_with_one_line_reasons(tmp_path, capsys):
    bad_json = _write(tmp_path, "AQUA-Bench-Animal-Sounds-Track.json", "[{oops")
    assert aqua_score([bad_json]) == 2
    assert f"{bad_json}:1:3: malformed JSON" in capsys.readouterr().err
    not_a_list = _write(tmp_path, "x.json", {"response": "a"})
    assert aqua_score([not_a_list]) == 2
    assert "expected a non-empty JSON list" in capsys.readouterr().err
    assert aqua_score([str(tmp_path / "missing.json")]) == 2
    assert "no such file or directory" in capsys.readouterr().err


def test_aqua_score_requires_a_response_per_entry_and_a_known_track(released_dir, tmp_path, capsys):
    entries = _entries(released_dir)
    for entry in entries:
        entry["response"] = "(a)"
    del entries[4]["response"]
    path = _write(tmp_path, "AQUA-Bench-Animal-Sounds-Track.json", entries)
    assert aqua_score([path]) == 2
    assert "entry 4: missing key 'response'" in capsys.readouterr().err
    for entry in entries:
        entry["response"] = "(a)"
        entry["audio_filename"] = "clip.wav"
        entry.pop("audio_animal", None)
    unnamed = _write(tmp_path, "replies.json", entries)
    assert aqua_score([unnamed]) == 2
    assert "pass --track" in capsys.readouterr().err
    assert aqua_score([unnamed, "--track", "animal", "--json"]) == 0


@pytest.mark.parametrize(
    "reply",
    [
        "",
        "   \n\t ",
        "Let me think. " * 800 + "The answer is (e).",
        "答案是 (e) None of the above 🐶",
        "**Answer:** *(E)* — None of the above",
        "(",
    ],
)
def test_odd_replies_are_scored_or_counted_unparsed_never_crash(released_dir, reply):
    docs = build_docs("animal", data_dir=str(released_dir), settings={"audio": False})
    aad = next(d for d in docs if d["type"] == "AAD")
    value = unpack_outcome(process_results(aad, [reply])["acc_aad"])
    assert (value.clip, value.type) == (aad["clip_index"], "AAD")
    if not reply.strip() or reply == "(":
        assert value.parsed is False and value.correct is False
    else:
        assert value.correct is True, reply


def test_aqua_eval_settings_are_checked_before_lm_eval_starts(released_dir, tmp_path):
    from aqua_tasks.core.run_settings import check_aqua_metadata, selects_aqua_tasks

    data = str(released_dir)
    assert selects_aqua_tasks(["aqua_*"]) and selects_aqua_tasks("hellaswag,aqua")
    assert not selects_aqua_tasks(["hellaswag"])
    with pytest.raises(AquaDataError, match="unknown --metadata key 'datadir'; did you mean"):
        check_aqua_metadata({"datadir": data})
    with pytest.raises(AquaDataError, match=r"no audio_root given.*\"audio\": false"):
        check_aqua_metadata({"data_dir": data})
    with pytest.raises(AquaDataError, match=r"extractor.*mmau"):
        check_aqua_metadata({"data_dir": data, "audio": False, "extractor": "bogus"})
    with pytest.raises(AquaDataError, match="is not a directory"):
        check_aqua_metadata({"data_dir": str(tmp_path / "nope"), "audio": False})
    check_aqua_metadata({"data_dir": data, "audio": False, "max_seq_lengths": [4096]})
    check_aqua_metadata({"data_dir": data, "vocal_audio_root": str(tmp_path)})


@pytest.mark.parametrize(
    ("metadata", "line"),
    [
        ({"judge_threshold": 9}, "--metadata judge_threshold must be a rating between 1 and 5"),
        ({"judge_threshold": "nan"}, "--metadata judge_threshold must be a rating between 1 and"),
        ({"orca": {"batch_size": "Infinity"}}, "--metadata: orca setting 'batch_size': expected"),
        ({"orca": {"clamp_threshold": "inf"}}, "--metadata: orca setting 'clamp_threshold'"),
        ({"orca": {"batchsize": 2}}, "--metadata: unknown setting(s) orca.batchsize; known:"),
        ({"orca": "ckpt"}, "--metadata: orca: expected an object of settings, got 'ckpt'"),
        (
            {
                "extractor": "aqua-rules+llm",
                "fallback": {"model": "m", "base_url": "http://x/v1", "max_tokens": "abc"},
            },
            "max_tokens='abc': expected an integer >= 1",
        ),
    ],
)
def test_aqua_eval_refuses_judge_and_fallback_numbers_before_lm_eval_starts(
    released_dir, capsys, metadata, line
):
    from eval_plugins.cli.aqua_eval import main as aqua_eval

    given = {"data_dir": str(released_dir), "audio": False, **metadata}
    args = ["--model", "aqua-random", "--tasks", "aqua-open_animal", "--metadata"]
    assert aqua_eval([*args, json.dumps(given)]) == 2
    (error,) = capsys.readouterr().err.strip().splitlines()
    assert error.startswith("aqua eval: error: ") and line in error


def test_plain_lm_eval_checks_the_judge_numbers_when_it_matches_the_tasks(released_dir):
    from lm_eval.tasks import TaskManager

    from eval_plugins.lm_eval.registration import install_task_folder
    from orca_judge.errors import OrcaMetricError

    install_task_folder(TaskManager)
    metadata = {"data_dir": str(released_dir), "audio": False, "orca": {"batch_size": 0}}
    manager = TaskManager(metadata=metadata)
    with pytest.raises(OrcaMetricError, match="orca setting 'batch_size'"):
        manager.match_tasks(["aqua-open_animal"])
    assert manager.match_tasks(["hellaswag"]) == ["hellaswag"]  # not an AQUA run


def test_a_max_gen_toks_our_models_cannot_use_stops_before_the_model_loads(released_dir):
    import subprocess
    import sys
    from pathlib import Path

    metadata = json.dumps({"data_dir": str(released_dir), "audio": False})
    args = ["--model", "aqua-random", "--tasks", "aqua_animal", "--limit", "2"]
    done = subprocess.run(
        [str(Path(sys.executable).parent / "aqua"), "eval", *args, "--metadata", metadata,
         "--gen_kwargs", "max_gen_toks=inf"],
        capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr[-2000:]
    assert done.stderr.strip().splitlines()[-1] == (
        "aqua eval: error: --gen_kwargs max_gen_toks=inf: expected an integer >= 1"
    )
    assert "Initializing aqua-random" not in done.stderr
