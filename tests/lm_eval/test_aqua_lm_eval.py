"""AQUA tasks end to end through the real `aqua eval` / `lm_eval` command lines."""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from aqua_tasks.core.data import TRACK_FILE_STEMS, load_json_file

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


def _letter(index: int) -> str:
    return chr(ord("a") + index)


def _wrong_index(entry: dict) -> int:
    return next(k for k, o in enumerate(entry["options"]) if o != entry["answer"])


def _reply(entry: dict, correct: bool) -> str:
    index = entry["options"].index(entry["answer"]) if correct else _wrong_index(entry)
    return f"The answer is ({_letter(index)}) {entry['options'][index]}."


def animal_pattern_reply(entry: dict, clip: int) -> str:
    """Solvable right iff clip%3; AAD iff even; IASD empty iff clip%5==0; IAQD iff clip%4==0."""
    kind = entry["type"]
    if kind == "Solvable":
        return _reply(entry, clip % 3 != 0)
    if kind == "AAD":
        return _reply(entry, clip % 2 == 0)
    if kind == "IASD":
        return "" if clip % 5 == 0 else _reply(entry, True)
    return _reply(entry, clip % 4 == 0)


# Hand-computed for animal_pattern_reply over the 360 released Animal clips:
# 240 clips have a right Solvable answer; of those 120 are even (AAD), 48 are multiples of 5
# (IASD unparsed: k%15 in {5,10}), 60 are multiples of 4 (k%12 in {4,8}).
EXPECTED_ANIMAL = {
    "acc": 240 / 360,
    "acc_aad": 180 / 360,
    "acc_iasd": 288 / 360,
    "acc_iaqd": 90 / 360,
    "ca_aad": 120 / 240,
    "ca_iasd": 192 / 240,
    "ca_iaqd": 60 / 240,
    "joint_aad": 120 / 360,
    "joint_iasd": 192 / 360,
    "joint_iaqd": 60 / 360,
    "n_ca_aad": 240,
    "n_ca_iasd": 240,
    "n_ca_iaqd": 240,
    "unparsed_rate": 72 / 1440,
    "n_items": 1440,
    "n_solvable": 360,
    "n_unconditioned": 0,
    "n_excluded": 0,
}


@pytest.fixture(scope="module")
def saved_replies(tmp_path_factory, released_dir) -> Path:
    """Authors'-format result files: the animal pattern above; music/vocal all right."""
    out = tmp_path_factory.mktemp("replies")
    for track, stem in TRACK_FILE_STEMS.items():
        entries = load_json_file(released_dir / f"{stem}.json")
        for n, entry in enumerate(entries):
            entry["response"] = (
                animal_pattern_reply(entry, n // 4) if track == "animal" else _reply(entry, True)
            )
        (out / f"{stem}.json").write_text(json.dumps(entries))
    return out


def run_cli(*args: str, timeout: int = 600) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=timeout, env=env
    )


def results_of(output_path: Path) -> dict:
    files = sorted(output_path.rglob("results_*.json"))
    assert files, f"no results file under {output_path}"
    return json.loads(files[-1].read_text())


def metrics_of(results: dict, task: str) -> dict[str, float]:
    return {
        k.split(",")[0]: v
        for k, v in results["results"][task].items()
        if "," in k and "_stderr," not in k
    }


def assert_metrics(actual: dict, expected: dict) -> None:
    for name, value in expected.items():
        assert actual[name] == pytest.approx(value), name


@pytest.fixture(scope="module")
def replay_run(tmp_path_factory, saved_replies, released_dir, released_audio_root) -> Path:
    out = tmp_path_factory.mktemp("replay_run")
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    proc = run_cli(
        BIN / "aqua",
        "eval",
        "--model",
        "aqua-replay",
        "--model_args",
        f"path={saved_replies}",
        "--tasks",
        "aqua_*",
        "--metadata",
        json.dumps(metadata),
        "--output_path",
        out,
        "--log_samples",
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    # What lm-eval printed, kept beside (not inside) the run folder.
    out.with_name(f"{out.name}.stdout").write_text(proc.stdout)
    return out


# The all-tracks row of the same run, pooled over clips by hand: music and vocal are right
# on all 360 clips, Animal as EXPECTED_ANIMAL (a mean of the three CAs would differ).
EXPECTED_POOLED = {
    "acc": (240 + 720) / 1080,
    "acc_aad": (180 + 720) / 1080,
    "acc_iasd": (288 + 720) / 1080,
    "acc_iaqd": (90 + 720) / 1080,
    "ca_aad": (120 + 720) / (240 + 720),
    "ca_iasd": (192 + 720) / 960,
    "ca_iaqd": (60 + 720) / 960,
    "joint_aad": (120 + 720) / 1080,
    "joint_iasd": (192 + 720) / 1080,
    "joint_iaqd": (60 + 720) / 1080,
    "n_ca_aad": 960,
    "n_ca_iasd": 960,
    "n_ca_iaqd": 960,
    "unparsed_rate": 72 / 4320,
    "n_items": 4320,
    "n_solvable": 1080,
    "n_unconditioned": 0,
    "n_excluded": 0,
}


def test_aqua_eval_replay_gives_hand_computed_metrics_on_released_data(replay_run):
    results = results_of(replay_run)
    # --tasks 'aqua_*' does not select the group, yet the all-tracks row is there, pooled.
    assert set(results["results"]) == {"aqua_animal", "aqua_music", "aqua_vocal", "aqua"}
    assert_metrics(metrics_of(results, "aqua_animal"), EXPECTED_ANIMAL)
    assert_metrics(metrics_of(results, "aqua"), EXPECTED_POOLED)
    assert metrics_of(results, "aqua")["ca_aad"] != pytest.approx((0.5 + 1 + 1) / 3)
    assert results["group_subtasks"]["aqua"] == ["aqua_animal", "aqua_music", "aqua_vocal"]
    pooled = results["results"]["aqua"]
    p = EXPECTED_POOLED["acc"]
    assert pooled["acc_stderr,none"] == pytest.approx(math.sqrt(p * (1 - p) / 1079))
    assert 0.005 < pooled["ca_aad_stderr,none"] < 0.02  # clip bootstrap, 960 clips
    assert pooled["n_items,none"] == 4320 and "n_items_stderr,none" not in pooled
    assert results["higher_is_better"]["aqua_animal"]["n_items"] is None
    music = metrics_of(results, "aqua_music")
    assert music["acc"] == 1.0 and music["ca_aad"] == 1.0 and music["n_ca_iaqd"] == 360
    assert results["n-samples"]["aqua_vocal"]["effective"] == 1440
    assert results["configs"]["aqua_animal"]["generation_kwargs"]["until"] == []
    assert results["configs"]["aqua_animal"]["generation_kwargs"]["max_gen_toks"] == 1024
    assert results["configs"]["aqua_animal"]["metadata"]["extractor"] == "aqua-rules"


def test_aqua_score_on_logged_samples_equals_the_lm_eval_run(replay_run, tmp_path):
    per_item = tmp_path / "items.jsonl"
    proc = run_cli(BIN / "aqua", "score", replay_run, "--json", "--per-item", per_item)
    assert proc.returncode == 0, proc.stderr
    scored = json.loads(proc.stdout)["results"]
    lm_eval_results = results_of(replay_run)
    for task in ("aqua_animal", "aqua_music", "aqua_vocal", "aqua"):
        assert_metrics(scored[task], metrics_of(lm_eval_results, task))
    rows = [json.loads(line) for line in per_item.read_text().splitlines()]
    assert len(rows) == 3 * 1440
    first = next(r for r in rows if r["task"] == "aqua_animal" and r["id"] == 0)
    assert first["correct"] is False and first["choice"] is not None and first["reason"]
    unparsed = next(r for r in rows if r["task"] == "aqua_animal" and r["id"] == 2)
    assert unparsed["parsed"] is False and unparsed["correct"] is False


def test_aqua_score_on_authors_results_format_equals_the_lm_eval_run(replay_run, saved_replies):
    stem = TRACK_FILE_STEMS["animal"]
    proc = run_cli(BIN / "aqua", "score", saved_replies / f"{stem}.json", "--json")
    assert proc.returncode == 0, proc.stderr
    assert_metrics(json.loads(proc.stdout)["results"]["aqua_animal"], EXPECTED_ANIMAL)
    text = run_cli(BIN / "aqua", "score", saved_replies / f"{stem}.json")
    assert "| aqua_animal | 66.7 [61.6, 71.3] | 50.0 [43.8, 56.4] | 80.0 [" in text.stdout
    assert "| 360 | 240 | 240 | 240 | 5.0 |" in text.stdout


def test_printed_tables_show_the_pooled_row_stderrs_and_counts(replay_run):
    printed = replay_run.with_name(f"{replay_run.name}.stdout").read_text()
    lines = printed.splitlines()
    assert (
        "aqua (animal+music+vocal pooled over clips)" in printed
        and "|Groups" in printed.replace(" ", "")
    )
    n_items = [line for line in lines if "|n_items " in line]
    # lm-eval prints every value with 4 decimals, counts too (its table is left as it is).
    assert n_items and all(re.search(r"\|\s*(1440|4320)\.0000\|", line) for line in n_items)
    assert "N/A" not in printed
    assert all("↑" not in line and "±" not in line for line in lines if "|n_" in line)
    ca = [line for line in lines if "|ca_aad " in line]
    assert ca and all("↑" in line and re.search(r"±\s*\|0\.\d{4}\|", line) for line in ca)
    assert "| aqua | 88.9 | 87.5 | 95.0 | 81.2 | 1080 | 960 | 960 | 960 | 1.7 |" in printed


def test_the_aqua_group_shows_pooled_figures_not_lm_evals_mean(saved_replies, released_dir):
    from lm_eval import simple_evaluate
    from lm_eval.tasks import TaskManager

    from aqua_tasks.reports.tables import paper_table
    from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
    from eval_plugins.lm_eval.registration import register_all

    # First 10 clips per track: Animal's Solvable is right on clips 1, 2, 4, 5, 7, 8 and its
    # IAQD on those that are multiples of 4 (4, 8); Music and Vocal are right everywhere.
    # lm-eval's mean of the three CAs would be (2/6 + 1 + 1) / 3 = 0.778.
    register_all()
    manager = TaskManager(
        include_path=str(task_config_dir()),
        include_defaults=False,
        metadata={"data_dir": str(released_dir), "audio": False},
    )
    results = simple_evaluate(
        model="aqua-replay",
        model_args=f"path={saved_replies}",
        tasks=["aqua"],
        task_manager=manager,
        limit=40,
    )
    for table in ("results", "groups"):
        group = results[table]["aqua"]
        assert group["ca_iaqd,none"] == pytest.approx((2 + 10 + 10) / (6 + 10 + 10))
        assert group["n_ca_iaqd,none"] == 26 and group["acc,none"] == pytest.approx(26 / 30)
        assert isinstance(group["ca_iaqd_stderr,none"], float)
    assert "| aqua | 86.7 | " in paper_table(results)
    assert "| 30 | 26 | 26 | 26 |" in paper_table(results)


def test_official_extractor_is_selectable_and_recorded(saved_replies):
    stem = TRACK_FILE_STEMS["animal"]
    proc = run_cli(
        BIN / "aqua", "score", saved_replies / f"{stem}.json", "--extractor", "official", "--json"
    )
    payload = json.loads(proc.stdout)
    assert payload["extractor"]["aqua_animal"] == "official"
    # "The answer is (x) ..." always matches the letter 'e' ending "the" under the official rule.
    assert payload["results"]["aqua_animal"]["acc"] < EXPECTED_ANIMAL["acc"]


def test_samples_without_a_clips_solvable_item_are_counted_and_chat_template_works(
    tmp_path, released_dir, released_audio_root
):
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    proc = run_cli(
        BIN / "aqua",
        "eval",
        "--model",
        "aqua-always-reject",
        "--tasks",
        "aqua_animal",
        "--samples",
        json.dumps({"aqua_animal": [0, 1, 2, 3, 5, 6, 7]}),
        "--apply_chat_template",
        "--metadata",
        json.dumps(metadata),
        "--output_path",
        tmp_path,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    m = metrics_of(results_of(tmp_path), "aqua_animal")
    assert "AQUA-Bench (paper layout, %)" in proc.stdout
    assert "| aqua_animal | 0.0 | — | — | — | 1 | 0 | 0 | 0 | 0.0 |" in proc.stdout
    assert m["n_unconditioned"] == 3  # items 5, 6, 7 lack Solvable item 4
    assert m["acc_aad"] == 1.0 and m["acc_iaqd"] == 1.0
    # The last option of Solvable item 0 is a real class, not its gold.
    assert m["acc"] == 0.0 and math.isnan(m["ca_aad"]) and m["n_ca_aad"] == 0


def test_missing_audio_fails_before_inference_naming_file_and_setting(tmp_path, released_dir):
    empty_root = tmp_path / "no_audio"
    empty_root.mkdir()
    metadata = {"data_dir": str(released_dir), "audio_root": str(empty_root)}
    proc = run_cli(
        BIN / "aqua",
        "eval",
        "--model",
        "aqua-first-option",
        "--tasks",
        "aqua_vocal",
        "--limit",
        "4",
        "--metadata",
        json.dumps(metadata),
        "--output_path",
        tmp_path / "out",
    )
    assert proc.returncode != 0
    assert "audio_16k/" in proc.stderr and "vocal_audio_root" in proc.stderr
    assert "answering" not in proc.stderr  # the model never started
    assert not list((tmp_path / "out").rglob("results_*.json"))


def test_missing_data_dir_is_a_clear_error_with_download_instruction(tmp_path):
    proc = run_cli(
        BIN / "aqua",
        "eval",
        "--model",
        "aqua-first-option",
        "--tasks",
        "aqua_music",
        "--limit",
        "1",
        "--metadata",
        json.dumps({"audio_root": str(tmp_path)}),
    )
    assert proc.returncode != 0
    assert "no data_dir given" in proc.stderr and "authors' public repository" in proc.stderr
