"""The run model every reader shares: which files make a run, which is newest, what is refused.

Runs here are built from `tests/data/legacy_run_0_1_0`, real lm-eval output, re-stamped and
with replies edited where a scenario needs two different runs.
"""

from __future__ import annotations

import json
import math
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aqua_tasks import runs
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.data import TRACK_FILE_STEMS, load_json_file
from aqua_tasks.core.manifest import MANIFEST_FIELDS
from aqua_tasks.errors import AmbiguousRunError, RunError
from aqua_tasks.runs.discovery import newest, output_file
from aqua_tasks.runs.lm_eval_samples import read_samples_file

LEGACY = Path(__file__).parents[1] / "data" / "legacy_run_0_1_0"
LEGACY_STAMP = "2026-12-01T03-08-18.454234"


def right_answer(sample: dict) -> dict:
    """The sample with its reply turned into the gold answer."""
    doc = sample["doc"]
    reply = f"({chr(ord('a') + doc['answer_index'])}) {doc['answer']}"
    return {**sample, "resps": [[reply]], "filtered_resps": [reply]}


def evaluation(folder: Path, stamp: str, date: float, edit=None) -> Path:
    """The legacy evaluation written into a folder under another time stamp and date."""
    folder.mkdir(parents=True, exist_ok=True)
    results = json.loads((LEGACY / f"results_{LEGACY_STAMP}.json").read_text())
    results["date"] = date
    (folder / f"results_{stamp}.json").write_text(json.dumps(results))
    for path in LEGACY.glob("samples_*.jsonl"):
        lines = [json.loads(line) for line in path.read_text().splitlines()]
        if edit is not None:
            lines = [edit(s) for s in lines]
        name = path.name.replace(LEGACY_STAMP, stamp)
        (folder / name).write_text("".join(json.dumps(s) + "\n" for s in lines))
    return folder


def score_json(capsys, *args: str) -> dict:
    assert aqua_score([*args, "--json", "--n-boot", "200"]) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def fail(capsys, main, args: list[str], code: int = 2) -> str:
    assert main(args) == code
    return capsys.readouterr().err


def test_legacy_run_scores_to_the_numbers_in_its_results_file(capsys):
    scored = score_json(capsys, str(LEGACY))["results"]
    recorded = json.loads((LEGACY / f"results_{LEGACY_STAMP}.json").read_text())["results"]
    # The tracks, then their all-tracks row pooled over clips (not in the 0.1.0 results).
    assert sorted(scored) == ["aqua", "aqua_animal", "aqua_music", "aqua_vocal"]
    for task, metrics in scored.items():
        if task == "aqua":
            continue
        for key, expected in recorded[task].items():
            name, _, filt = key.partition(",")
            if filt != "none" or "_stderr" in name:
                continue
            if isinstance(expected, float) and math.isnan(expected):
                assert metrics[name] is None, (task, name)
            else:
                assert metrics[name] == pytest.approx(expected), (task, name)


def test_legacy_items_keep_the_manifest_their_docs_carry_alone_or_with_the_results():
    recorded = json.loads((LEGACY / f"results_{LEGACY_STAMP}.json").read_text())["configs"]
    (samples,) = LEGACY.glob("samples_aqua_music_*.jsonl")
    for items in (runs.read_run(LEGACY).aqua_items, runs.read_run(samples).aqua_items):
        assert items
        for item in items:
            assert dict(item.manifest) == {k: item.doc[k] for k in MANIFEST_FIELDS}
            assert dict(item.manifest) == recorded[item.task]["metadata"]["aqua_manifest"]


def test_two_model_folders_are_refused_listing_both_and_one_folder_is_read(capsys, tmp_path):
    base = tmp_path / "base"
    # The newer run sorts first by path: a reader going by path order would take the older.
    evaluation(base / "a_new_model", "2026-12-02T10-00-00.000000", 1796200000.0, right_answer)
    evaluation(base / "z_old_model", "2026-12-01T10-00-00.000000", 1796100000.0)
    for main, args in (
        (aqua_score, [str(base)]),
        (cli_report.main, [str(base), "--out", str(tmp_path / "r"), "--no-chart"]),
        (cli_regress.main, ["--baseline", str(base), "--candidate", str(base / "a_new_model")]),
    ):
        err = fail(capsys, main, args)
        assert err.count("\n") == 1 and "holds the outputs of 2 runs" in err
        assert "a_new_model, z_old_model" in err and "point at the one to use" in err
    scored = score_json(capsys, str(base / "a_new_model"))["results"]
    assert {t: m["acc"] for t, m in scored.items()} == dict.fromkeys(scored, 1.0)
    with pytest.raises(AmbiguousRunError):
        runs.read_run(base)


def test_newest_evaluation_is_the_one_recorded_last_not_the_one_named_last(capsys, tmp_path):
    run = tmp_path / "run"
    # Named earlier (e.g. a clock in another time zone) but recorded later: the right answers.
    evaluation(run, "2026-11-30T23-00-00.000000", 1796200000.0, right_answer)
    evaluation(run, LEGACY_STAMP, 1796100000.0)
    scored = score_json(capsys, str(run))["results"]
    assert {t: m["acc"] for t, m in scored.items()} == dict.fromkeys(scored, 1.0)
    files = runs.find_outputs(run)
    assert files.newest_results.path.name == "results_2026-11-30T23-00-00.000000.json"
    assert {f.time_from for f in files.samples} == {"recorded"}
    assert cli_report.main([str(run), "--out", str(tmp_path / "r"), "--no-chart", "--json"]) == 0
    sources = json.loads(capsys.readouterr().out)["sources"]
    assert "newest of 2 results files: results_2026-11-30T23-00-00.000000.json" in sources[0]


def test_newest_falls_back_to_the_file_name_time_then_to_mtime(tmp_path):
    named = output_file(tmp_path / "x", "results", "", "2026-01-02T03-04-05.5", None)
    assert named.time_from == "file name"
    (tmp_path / "y").write_text("")
    unnamed = output_file(tmp_path / "y", "samples", "t", "not-a-time", None)
    assert unnamed.time_from == "mtime"
    recorded = output_file(tmp_path / "x", "results", "", "2026-01-02T03-04-05", 5.0)
    assert (recorded.time_from, recorded.time) == ("recorded", 5.0)
    picked = newest([named, recorded])
    assert picked[""] is named  # 2026 is after 5 s past the epoch


def test_items_logged_twice_are_refused_naming_their_ids(capsys, tmp_path):
    run = evaluation(tmp_path / "run", LEGACY_STAMP, 1796100000.0)
    samples = run / f"samples_aqua_animal_{LEGACY_STAMP}.jsonl"
    samples.write_text(samples.read_text() * 2)
    err = fail(capsys, aqua_score, [str(run)])
    ids = [json.loads(line)["doc"]["id"] for line in samples.read_text().splitlines()[:5]]
    assert err.count("\n") == 1 and f"{samples}:9:" in err
    assert f"aqua_animal has 8 items more than once (id {', '.join(map(str, ids))} …)" in err
    assert fail(capsys, cli_regress.main, ["--baseline", str(run), "--candidate", str(run)])


def test_samples_file_named_for_another_track_than_its_docs_is_refused(capsys, tmp_path):
    run = tmp_path / "run"
    run.mkdir()
    shutil.copy(
        LEGACY / f"samples_aqua_animal_{LEGACY_STAMP}.jsonl",
        run / f"samples_aqua_music_{LEGACY_STAMP}.jsonl",
    )
    err = fail(capsys, aqua_score, [str(run)])
    assert "file name says task aqua_music (track music) but its docs are of track animal" in err
    err = fail(capsys, aqua_score, [str(LEGACY), "--track", "music"])
    assert "--track music but the logged docs are of track animal, vocal" in err


def _mixed_entries(released_dir: Path) -> list[dict]:
    entries = []
    for track in ("animal", "vocal"):
        part = load_json_file(released_dir / f"{TRACK_FILE_STEMS[track]}.json")[:8]
        for n, entry in enumerate(part):
            wanted = entry["answer"] if n % 3 else entry["options"][0]
            entry["response"] = f"The answer is {wanted}."
        entries.extend(part)
    return entries


def test_authors_file_mixing_tracks_is_scored_per_track(capsys, tmp_path, released_dir):
    entries = _mixed_entries(released_dir)
    mixed = tmp_path / "replies.json"
    mixed.write_text(json.dumps(entries))
    scored = score_json(capsys, str(mixed))["results"]
    assert sorted(scored) == ["aqua", "aqua_animal", "aqua_vocal"]  # with the pooled row
    for track, part in (("animal", entries[:8]), ("vocal", entries[8:])):
        alone = tmp_path / f"{TRACK_FILE_STEMS[track]}.json"
        alone.write_text(json.dumps(part))
        assert score_json(capsys, str(alone))["results"] == {
            f"aqua_{track}": scored[f"aqua_{track}"]
        }
        assert scored[f"aqua_{track}"]["n_items"] == 8
    # An entry whose audio path tells no track cannot be put in either part.
    entries[3]["audio_filename"] = "clip.wav"
    entries[3].pop("audio_animal")
    mixed.write_text(json.dumps(entries))
    err = fail(capsys, aqua_score, [str(mixed)])
    assert "mixes tracks (animal, vocal) and entry 3's audio path tells none" in err


@pytest.mark.slow
def test_scoring_reporting_and_regressing_import_neither_lm_eval_nor_datasets(tmp_path):
    script = (
        "import sys, contextlib, io\n"
        "from aqua_tasks.cli import regress as cli_regress, report as cli_report\n"
        "from aqua_tasks.cli import score as cli_score\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    assert cli_score.main([{str(LEGACY)!r}, '--n-boot', '50']) == 0\n"
        f"    assert cli_report.main([{str(LEGACY)!r}, '--out', {str(tmp_path)!r}]) == 0\n"
        f"    assert cli_regress.main(['--baseline', {str(LEGACY)!r}, '--candidate',"
        f" {str(LEGACY)!r}, '--no-progress', '--n-boot', '50']) == 0\n"
        "print(sorted(m for m in ('lm_eval', 'datasets') if m in sys.modules))\n"
    )
    proc = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip() == "[]"


def test_a_run_recorded_by_0_1_0_reads_through_the_new_homes():
    assert len(runs.read_run(LEGACY).items) == 24
    from aqua_tasks.core.docs import audio_enabled, doc_to_item, item_to_doc
    from aqua_tasks.reports.run_metrics import newest_results_file
    from aqua_tasks.runs import run_label

    assert audio_enabled({"audio": "off"}) is False and callable(doc_to_item)
    assert callable(item_to_doc) and run_label({"model": "m"}) == "m"
    assert newest_results_file(LEGACY)[0].name == f"results_{LEGACY_STAMP}.json"


def test_malformed_lines_name_file_and_line(tmp_path):
    path = tmp_path / "samples_aqua_animal_2026-01-01T00-00-00.jsonl"
    path.write_text('{"doc": {}}\n\n{oops\n')
    with pytest.raises(RunError, match=r"jsonl:3:2: malformed JSON"):
        list(runs.iter_jsonl(path))
    path.write_text('{"doc_id": 0, "doc": {"track": "animal", "options": []}}\n')
    with pytest.raises(RunError, match=r"jsonl:1: malformed AQUA doc \(no field 'id'\)"):
        read_samples_file(path)


# --- provenance: which run every figure comes from ---------------------------------------


def _with_model(run: Path, stamp: str, model: str) -> None:
    path = run / f"results_{stamp}.json"
    results = json.loads(path.read_text())
    results["config"]["model"] = model
    path.write_text(json.dumps(results))


def _samples_without_results(folder: Path, task: str, stamp: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    source = LEGACY / f"samples_{task}_{LEGACY_STAMP}.jsonl"
    return Path(shutil.copy(source, folder / source.name.replace(LEGACY_STAMP, stamp)))


def test_samples_of_evaluations_whose_model_is_not_recorded_are_never_combined(capsys, tmp_path):
    run = tmp_path / "run"
    # Two models' samples whose results files are gone: nothing says they are one model's run.
    _samples_without_results(run, "aqua_animal", "2026-12-01T10-00-00.000000")
    _samples_without_results(run, "aqua_vocal", "2026-12-02T10-00-00.000000")
    for main, args in (
        (aqua_score, [str(run)]),
        (cli_report.main, [str(run), "--out", str(tmp_path / "r"), "--no-chart"]),
        (cli_regress.main, ["--baseline", str(run), "--candidate", str(run)]),
    ):
        err = fail(capsys, main, args)
        assert err.count("\n") == 1 and "would combine the samples of 2 evaluations" in err
        assert "samples_aqua_animal_2026-12-01T10-00-00.000000.jsonl (model not recorded" in err
        assert "pass one samples file, or restore the results files" in err
    # The samples of one evaluation (one time stamp) are one run, its model unknown.
    one = tmp_path / "one"
    for task in ("aqua_animal", "aqua_vocal"):
        _samples_without_results(one, task, LEGACY_STAMP)
    scored = score_json(capsys, str(one))
    assert sorted(scored["results"]) == ["aqua", "aqua_animal", "aqua_vocal"]
    assert {s["model"] for rows in scored["sources"].values() for s in rows} == {None}


def test_runs_of_one_task_by_two_models_in_one_folder_are_refused_listing_both(capsys, tmp_path):
    run = tmp_path / "run"
    older, newer = "2026-12-01T10-00-00.000000", "2026-12-02T10-00-00.000000"
    evaluation(run, older, 1796100000.0)
    evaluation(run, newer, 1796200000.0, right_answer)
    _with_model(run, newer, "aqua-always-reject")
    err = fail(capsys, aqua_score, [str(run)])
    assert err.count("\n") == 1 and "holds runs of different models" in err
    date = runs.when(1796100000.0)
    assert f"samples_aqua_animal_{older}.jsonl +2 more (aqua-first-option, {date})" in err
    assert "(aqua-always-reject, " in err and "pass the results file of the one to use" in err
    # Choosing one by its results file scores that run, and the output says which it is.
    scored = score_json(capsys, str(run / f"results_{older}.json"))
    assert {t: m["acc"] for t, m in scored["results"].items()} != dict.fromkeys(scored, 1.0)
    (source,) = scored["sources"]["aqua_animal"]
    assert source == {
        "task": "aqua_animal",
        "file": str(run / f"samples_aqua_animal_{older}.jsonl"),
        "model": "aqua-first-option",
        "date": date,
        "dated_by": "recorded",
        "results": str(run / f"results_{older}.json"),
    }


def test_every_command_names_the_file_model_and_date_of_each_tasks_figures(capsys, tmp_path):
    run = tmp_path / "run"
    # A rerun of every task by the same model: the newer evaluation is the one read.
    evaluation(run, "2026-12-01T10-00-00.000000", 1796100000.0)
    evaluation(run, "2026-12-02T10-00-00.000000", 1796200000.0, right_answer)
    newer = "samples_aqua_animal_2026-12-02T10-00-00.000000.jsonl (aqua-first-option, "
    line = f"{newer}{runs.when(1796200000.0)}, recorded)"
    assert aqua_score([str(run), "--n-boot", "20", "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert f"aqua_animal: from {line}; extractor aqua-rules" in out
    assert "aqua: pools aqua_animal, aqua_music, aqua_vocal;" in out
    pooled = score_json(capsys, str(run))["sources"]["aqua"]
    assert [s["task"] for s in pooled] == ["aqua_animal", "aqua_music", "aqua_vocal"]
    report = ["--out", str(tmp_path / "r"), "--no-chart", "--json", "--n-boot", "20"]
    assert cli_report.main([str(run), *report]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert f"aqua_animal from {line}" in payload["sources"][0]
    assert payload["read_from"][0]["tasks"][0]["date"] == runs.when(1796200000.0)
    regress = ["--baseline", str(run), "--candidate", str(run), "--n-boot", "20"]
    assert cli_regress.main([*regress, "--json", "--no-progress"]) == 0
    payload = json.loads(capsys.readouterr().out)
    assert [s["model"] for s in payload["baseline"]["sources"]] == ["aqua-first-option"] * 3
    assert cli_regress.main([*regress, "--no-progress"]) == 0
    assert f"  - aqua_animal: `{line}`" in capsys.readouterr().out
