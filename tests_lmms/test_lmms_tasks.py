"""AQUA tasks under the real `lmms-eval` CLI score like the lm-eval tasks.

One lm-eval run and one lmms-eval run replay the same saved replies (some empty, some
unparseable) on the animal track; every metric and every logged reply must agree.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest
from conftest import BIN, REPO, lmms_eval, lmms_results, lmms_samples, metadata_env, run_cli

from aqua_tasks.core.data import load_items
from aqua_tasks.core.scoring import ALL_METRICS, as_outcome, score_reply
from aqua_tasks.task.definition import build_docs
from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.task import METADATA_ENV, process_results, run_settings

TASK = "aqua_animal"


def reply_for(index: int, item) -> str:
    """A mix of replies: empty, right, rejecting, unparseable, first option."""
    letter = chr(ord("a") + item.answer_index)
    return [
        "",
        f"({letter}) {item.answer}",
        f"The answer is ({chr(ord('a') + len(item.options) - 1)}).",
        "Hmm.",
        f"(a) {item.options[0]}",
    ][index % 5]


@pytest.fixture(scope="module")
def replies_file(tmp_path_factory, released_dir) -> Path:
    """The released animal file with a `response` per entry (the authors' results layout)."""
    source = released_dir / "AQUA-Bench-Animal-Sounds-Track.json"
    entries = json.loads(source.read_text())
    items = load_items(released_dir, "animal")
    for index, (entry, item) in enumerate(zip(entries, items, strict=True)):
        entry["response"] = reply_for(index, item)
    path = tmp_path_factory.mktemp("replies") / source.name
    path.write_text(json.dumps(entries))
    return path


@pytest.fixture(scope="module")
def lm_eval_run(tmp_path_factory, released_dir, released_audio_root, replies_file) -> Path:
    out = tmp_path_factory.mktemp("lm-eval")
    metadata = json.dumps({"data_dir": str(released_dir), "audio_root": str(released_audio_root)})
    run_cli(
        *(BIN / "lm_eval", "--model", "aqua-replay", "--model_args", f"path={replies_file}"),
        *("--tasks", TASK, "--metadata", metadata, "--log_samples", "--output_path", out),
    )
    return out


@pytest.fixture(scope="module")
def lmms_run(tmp_path_factory, released_dir, released_audio_root, replies_file) -> Path:
    out = tmp_path_factory.mktemp("lmms-eval")
    folder = run_cli(
        sys.executable, "-m", "eval_plugins.lmms_eval", "--include-path"
    ).stdout.strip()
    lmms_eval(
        *("--include_path", folder, "--model", "aqua-replay"),
        *("--model_args", f"path={replies_file}", "--tasks", TASK),
        *("--log_samples", "--output_path", out),
        env=metadata_env(released_dir, released_audio_root),
    )
    return out


def test_include_path_prints_the_installed_task_folder():
    folder = Path(include_path())
    assert (folder / "aqua_animal.yaml").is_file() and (folder / "_aqua_base").is_file()
    assert folder.resolve() != (REPO / "task_configs").resolve()


def test_every_lm_eval_task_has_an_identical_lmms_eval_task():
    lm_eval_tasks = {p.name: p.read_text() for p in (REPO / "task_configs").glob("aqua*_*.yaml")}
    lmms_tasks = {p.name: p.read_text() for p in Path(include_path()).glob("aqua*_*.yaml")}
    assert len(lm_eval_tasks) == 20  # 3 released tracks × 5 settings + aqua_mmau + 4 aqua-open
    assert lmms_tasks == lm_eval_tasks


def test_lmms_eval_metrics_equal_lm_eval_metrics_for_the_same_replies(lm_eval_run, lmms_run):
    (lm_path,) = sorted(lm_eval_run.rglob("results_*.json"))
    expected = json.loads(lm_path.read_text())["results"][TASK]
    got = lmms_results(lmms_run)["results"][TASK]
    for metric in ALL_METRICS:
        want, have = expected[f"{metric},none"], got[f"{metric},none"]
        assert (math.isnan(want) and math.isnan(have)) or have == pytest.approx(want), metric
    # The mix of replies gives non-trivial figures, with a fifth of them empty.
    assert got["n_items,none"] == 1440 and got["n_solvable,none"] == 360
    assert 0.0 < got["acc,none"] < 1.0 and got["unparsed_rate,none"] == pytest.approx(0.4)


def test_lmms_eval_logs_the_same_replies_targets_and_outcomes(lm_eval_run, lmms_run):
    (lm_path,) = sorted(lm_eval_run.rglob(f"samples_{TASK}_*.jsonl"))
    lm_rows = sorted(
        (json.loads(line) for line in lm_path.read_text().splitlines()), key=lambda r: r["doc_id"]
    )
    rows = lmms_samples(lmms_run, TASK)
    assert [r["doc_id"] for r in rows] == [r["doc_id"] for r in lm_rows] == list(range(1440))
    for row, lm_row in zip(rows, lm_rows, strict=True):
        assert row["filtered_resps"] == lm_row["filtered_resps"][0]
        assert row["target"] == lm_row["target"]
        assert as_outcome(row["acc"])[1:] == as_outcome(lm_row["acc"])[1:]
        # The prompt is lm-eval's without the "<audio>" placeholder (the model places the clip).
        assert lm_row["arguments"]["gen_args_0"]["arg_0"] == "<audio>\n" + row["input"]


def test_lmms_eval_records_the_run_manifest_and_generation_settings(lmms_run):
    config = lmms_results(lmms_run)["configs"][TASK]
    assert config["metadata"]["aqua_manifest"]["track"] == "animal"
    assert config["metadata"]["aqua_manifest"]["extractor"] == "aqua-rules"
    assert config["generation_kwargs"]["max_new_tokens"] == 1024
    assert config["generation_kwargs"]["until"] == []


def test_empty_reply_scores_as_unparsed_empty_reply_error(released_dir):
    doc = build_docs("animal", data_dir=str(released_dir), settings={"audio": False})[0]
    (verdict_reason,) = {
        score_reply(item, "", extractor=doc["extractor"]).reason
        for item in load_items(released_dir, "animal")[:1]
    }
    assert verdict_reason == "error: empty reply"
    for results in ([""], [], [None]):
        values = process_results(doc, [r for r in results if r is not None])
        assert set(values) == set(ALL_METRICS)
        assert as_outcome(values["acc"]).parsed is False
        assert as_outcome(values["acc"]).correct is False


def test_process_results_is_pure(released_dir):
    doc = build_docs("animal", data_dir=str(released_dir), settings={"audio": False})[0]
    first = process_results(doc, ["(c) Dog"])
    # lmms-eval retries it and runs it in threads: the same input, the same value.
    assert process_results(doc, ["(c) Dog"]) == first
    assert as_outcome(first["acc"]).correct is True


def test_data_folder_without_the_files_names_the_task_file_and_setting(tmp_path, monkeypatch):
    from eval_plugins.lmms_eval.aqua.task import AquaTask

    monkeypatch.setenv(METADATA_ENV, json.dumps({"data_dir": str(tmp_path)}))
    config = {"task": TASK, "dataset_kwargs": {"track": "animal"}, "test_split": "test"}
    with pytest.raises(ValueError) as raised:
        AquaTask(config=config)
    message = str(raised.value)
    assert message.startswith(f"{TASK}: AQUA-Bench-Animal-Sounds-Track.json not found")
    assert METADATA_ENV in message and "--metadata '" not in message


def test_missing_data_folder_is_a_one_line_error_naming_the_setting():
    with pytest.raises(ValueError, match=f"no AQUA data folder given.*{METADATA_ENV}"):
        run_settings({"version": 1.0}, environ={})
    with pytest.raises(ValueError, match=f"{METADATA_ENV} is not valid JSON"):
        run_settings({}, environ={METADATA_ENV: "{data_dir"})
    assert run_settings(
        {"extractor": "x", "data_dir": "a"}, environ={METADATA_ENV: '{"data_dir": "b"}'}
    ) == {
        "extractor": "x",
        "data_dir": "b",
    }


def test_a_misspelt_aqua_metadata_key_is_refused_not_ignored():
    # lm-eval's --metadata refuses the same near-miss; here every key is AQUA's own.
    with pytest.raises(ValueError, match=f"{METADATA_ENV}: unknown key 'extractr'; did you mean"):
        run_settings({}, environ={METADATA_ENV: '{"data_dir": "d", "extractr": "official"}'})
    with pytest.raises(ValueError, match=f"{METADATA_ENV}: unknown key 'colour'; known: data_dir"):
        run_settings({}, environ={METADATA_ENV: '{"data_dir": "d", "colour": 1}'})
