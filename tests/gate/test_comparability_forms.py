"""aqua regress applies every comparability check whatever form a run is given in.

A run can be a folder, its results file, a samples file (with or without its results file
beside it), an lmms-eval log or the authors' results format. Runs here are the real committed
ones in tests/data (an lm-eval run that fed audio and the lmms-eval replay of its replies),
and a text-only copy of the lm-eval run with the same replies.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.core.data import TRACK_FILE_STEMS, load_json_file
from aqua_tasks.core.docs import TEXT_ONLY_AUDIO_ERROR

DATA = Path(__file__).parents[1] / "data"
LEGACY = DATA / "legacy_run_0_1_0"
STAMP = "2026-12-01T03-08-18.454234"
LMMS = DATA / "lmms_replay_legacy"
LMMS_ANIMAL = "20261201_180306_samples_aqua_animal.jsonl"
RESULTS = f"results_{STAMP}.json"
ANIMAL = f"samples_aqua_animal_{STAMP}.jsonl"
AUDIO_DIFFERS = "aqua_animal: audio input differs (baseline with audio, candidate text-only)"


def regress(capsys, base: Path, cand: Path, *args: str) -> tuple[int, str, str]:
    code = cli_regress.main(
        [
            *("--baseline", str(base), "--candidate", str(cand)),
            *("--n-boot", "50", "--no-progress", *args),
        ]
    )
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def text_only(tmp_path_factory) -> Path:
    """The legacy run as a text-only run would have logged it: the same replies, no audio."""
    run = tmp_path_factory.mktemp("forms") / "text-only"
    shutil.copytree(LEGACY, run)
    for path in run.glob("samples_*.jsonl"):
        samples = [json.loads(line) for line in path.read_text().splitlines()]
        for sample in samples:
            sample["doc"].update(audio_path="", audio_error=TEXT_ONLY_AUDIO_ERROR)
        path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    results = json.loads((run / RESULTS).read_text())
    for config in results["configs"].values():
        config["metadata"]["audio"] = False
    (run / RESULTS).write_text(json.dumps(results))
    return run


def alone(path: Path, dest: Path) -> Path:
    """A copy of one samples file, without its results file."""
    dest.mkdir(parents=True, exist_ok=True)
    return Path(shutil.copy(path, dest / path.name))


@pytest.mark.parametrize("form", ["folder", "results file", "samples file", "samples file alone"])
def test_a_text_only_run_is_refused_against_an_audio_run_in_every_form(
    capsys, tmp_path, text_only, form
):
    if form == "folder":
        base, cand = LEGACY, text_only
    elif form == "results file":
        base, cand = LEGACY / RESULTS, text_only / RESULTS
    elif form == "samples file":
        base, cand = LEGACY / ANIMAL, text_only / ANIMAL
    else:
        base, cand = (
            alone(LEGACY / ANIMAL, tmp_path / "a"),
            alone(text_only / ANIMAL, tmp_path / "b"),
        )
    code, _, err = regress(capsys, base, cand)
    assert code == 2, err
    assert err.splitlines()[-1] == f"aqua regress: not comparable: {AUDIO_DIFFERS}"


def test_the_same_run_compares_with_itself_across_forms(capsys, tmp_path):
    code, _, err = regress(capsys, LEGACY / ANIMAL, alone(LEGACY / ANIMAL, tmp_path))
    assert code == 0, err


def test_an_lmms_eval_samples_file_without_its_results_must_state_its_audio(
    capsys, tmp_path, released_dir
):
    lmms = alone(LMMS / LMMS_ANIMAL, tmp_path)
    data = ("--data-dir", str(released_dir))
    code, _, err = regress(capsys, LEGACY / ANIMAL, lmms, *data)
    assert code == 2
    assert err.splitlines()[-1] == (
        "aqua regress: not comparable: aqua_animal: cannot tell whether the candidate fed audio "
        "(lmms-eval records it only in the results file, and none was found for its samples); "
        "pass its run folder or results file, or state it with --candidate-audio on|off"
    )
    # The same rows read with their results file beside them are compared as they are.
    assert regress(capsys, LEGACY / ANIMAL, LMMS / LMMS_ANIMAL, *data)[0] == 0
    assert regress(capsys, LEGACY / ANIMAL, lmms, *data, "--candidate-audio", "on")[0] == 0
    code, _, err = regress(capsys, text_only_of(tmp_path), lmms, *data, "--candidate-audio", "on")
    assert code == 2
    assert "aqua_animal: audio input differs (baseline text-only, candidate with audio)" in err


def text_only_of(tmp_path: Path) -> Path:
    """The legacy animal samples as a text-only run logs them, alone."""
    path = tmp_path / "text" / ANIMAL
    path.parent.mkdir()
    samples = [json.loads(line) for line in (LEGACY / ANIMAL).read_text().splitlines()]
    for sample in samples:
        sample["doc"].update(audio_path="", audio_error=TEXT_ONLY_AUDIO_ERROR)
    path.write_text("".join(json.dumps(s) + "\n" for s in samples))
    return path


def test_a_stated_audio_mode_that_contradicts_the_record_is_refused(capsys):
    code, _, err = regress(capsys, LEGACY, LEGACY, "--baseline-audio", "off")
    assert code == 2 and err.startswith("aqua regress: error: ") and err.count("\n") == 1
    assert f"{LEGACY}: stated without audio, but its aqua_animal records a run with audio" in err


@pytest.fixture(scope="module")
def authors_file(tmp_path_factory, released_dir) -> Path:
    """The legacy run's animal replies in the authors' results format (released entries)."""
    stem = TRACK_FILE_STEMS["animal"]
    entries = {e["id"]: e for e in load_json_file(released_dir / f"{stem}.json")}
    samples = [json.loads(line) for line in (LEGACY / ANIMAL).read_text().splitlines()]
    rows = [{**entries[s["doc"]["id"]], "response": s["filtered_resps"][0]} for s in samples]
    path = tmp_path_factory.mktemp("authors") / f"{stem}.json"
    path.write_text(json.dumps(rows))
    return path


def test_an_authors_baseline_of_the_same_items_compares_once_its_audio_is_stated(
    capsys, authors_file
):
    code, _, err = regress(capsys, authors_file, LEGACY / ANIMAL)
    assert code == 2 and "questions differ" not in err
    assert (
        "aqua_animal: cannot tell whether the baseline fed audio (the authors' results format "
        "does not record it); pass its run folder or results file, or state it with "
        "--baseline-audio on|off"
    ) in err
    code, out, err = regress(capsys, authors_file, LEGACY / ANIMAL, "--baseline-audio", "on")
    assert code == 0, err
    assert "no regression" in out
    assert "authors' results format, which logs no prompt: taken to be the released question" in err


def test_an_authors_baseline_whose_question_differs_names_the_field(capsys, tmp_path, authors_file):
    rows = json.loads(authors_file.read_text())
    rows[2]["question"] = "Listen closely. " + rows[2]["question"]
    edited = tmp_path / authors_file.name
    edited.write_text(json.dumps(rows))
    code, _, err = regress(capsys, edited, LEGACY / ANIMAL, "--baseline-audio", "on")
    assert code == 2
    assert (
        f"aqua_animal: questions differ (item content; fields question; 1 items, e.g. id "
        f"{rows[2]['id']})"
    ) in err
