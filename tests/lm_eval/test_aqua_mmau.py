"""`aqua_mmau`: the MMAU track built by `aqua build`, run through the real `aqua eval` command line.

A 12-clip build of the real MMAU test-mini (template generator) is run with the baselines,
text-only and with audio (the one real MMAU clip plus synthesized stand-ins), then beside the
released tracks under `aqua_*`, and reported with the published MMAU rows.
"""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import logging
import math
from pathlib import Path

import pytest
from mmau_fixtures import (
    MMAU_DEMO_CLIP,
    MMAU_DEMO_ID,
    MMAU_TEST_MINI,
    NEEDS_MMAU_DATA,
    check_first_option_mmau_figures,
    write_mmau_audio,
)

from aqua_tasks.audio.clips import AudioRoots, resolve_audio
from aqua_tasks.cli import build as cli_build
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.core.data import TRACK_FILE_STEMS
from aqua_tasks.errors import AquaDataError
from aqua_tasks.reports.run_metrics import load_run_metrics
from aqua_tasks.task.definition import build_docs
from eval_plugins.cli import aqua_eval as cli_eval

pytestmark = [pytest.mark.slow, NEEDS_MMAU_DATA]
MMAU = MMAU_TEST_MINI
MMAU_FILE = "AQUA-Bench-MMAU-Track.json"
DEMO_ID = MMAU_DEMO_ID
DEMO_CLIP = MMAU_DEMO_CLIP
N_CLIPS = 12


@pytest.fixture(scope="module")
def mmau_dir(tmp_path_factory) -> Path:
    """`aqua build --limit 12` of the real test-mini: the first 12 items, 48 questions."""
    out = tmp_path_factory.mktemp("mmau-built")
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_build.main(
            [
                *("--source", "mmau", "--input", str(MMAU), "--output", str(out)),
                *("--limit", str(N_CLIPS), "--no-progress"),
            ]
        )
    assert code == 0
    return out


@pytest.fixture(scope="module")
def entries(mmau_dir) -> list[dict]:
    return json.loads((mmau_dir / MMAU_FILE).read_text(encoding="utf-8"))


@pytest.fixture(scope="module")
def mmau_audio(tmp_path_factory, entries) -> Path:
    """An MMAU audio root: test-mini-audios/ with the real demo clip and synthesized others."""
    return write_mmau_audio(tmp_path_factory.mktemp("mmau-audio"), entries)


@pytest.fixture(scope="module")
def four_tracks_dir(tmp_path_factory, released_dir, mmau_dir) -> Path:
    """A data_dir holding the three released files and the built MMAU file."""
    folder = tmp_path_factory.mktemp("four-tracks")
    for stem in TRACK_FILE_STEMS.values():
        (folder / f"{stem}.json").symlink_to(released_dir / f"{stem}.json")
    (folder / MMAU_FILE).symlink_to(mmau_dir / MMAU_FILE)
    return folder


def aqua_eval(out: Path, metadata: dict, *args: str) -> Path:
    """One run of the real aqua eval command line (in process)."""
    with contextlib.redirect_stdout(io.StringIO()) as printed:
        code = cli_eval.main(
            [*args, "--metadata", json.dumps(metadata), "--output_path", str(out), "--log_samples"]
        )
    assert code == 0
    out.with_name(f"{out.name}.stdout").write_text(printed.getvalue())
    return out


def results_of(run: Path) -> dict:
    return json.loads(max(run.rglob("results_*.json")).read_text())


def metrics(results: dict, task: str) -> dict[str, float]:
    return {
        k.split(",")[0]: v
        for k, v in results["results"][task].items()
        if "," in k and "_stderr," not in k
    }


@pytest.fixture(scope="module")
def runs(
    tmp_path_factory, builtin_index_parsed_once, mmau_dir, mmau_audio, four_tracks_dir, released_dir
):
    root = tmp_path_factory.mktemp("mmau-runs")
    text_only = {"data_dir": str(mmau_dir), "audio": False}
    with_audio = {"data_dir": str(mmau_dir), "mmau_audio_root": str(mmau_audio)}
    return {
        "first": aqua_eval(
            root / "first", text_only, "--model", "aqua-first-option", "--tasks", "aqua_mmau"
        ),
        "reject": aqua_eval(
            root / "reject-text", text_only, "--model", "aqua-always-reject", "--tasks", "aqua_mmau"
        ),
        "reject_audio": aqua_eval(
            root / "reject", with_audio, "--model", "aqua-always-reject", "--tasks", "aqua_mmau"
        ),
        "four": aqua_eval(
            root / "four",
            {"data_dir": str(four_tracks_dir), "audio": False},
            *("--model", "aqua-first-option", "--tasks", "aqua_*", "--limit", "8"),
        ),
    }


def test_built_file_has_the_demo_item_and_first_options_as_counted_by_hand(entries):
    assert len(entries) == 4 * N_CLIPS
    solvable = [e for e in entries if e["type"] == "Solvable"]
    # The 12 first items of test-mini: the answer is option (a) in 10, option (b) in 2.
    assert [e["options"].index(e["answer"]) for e in solvable] == [
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        0,
        0,
        1,
        0,
        0,
    ]
    assert solvable[2]["source_id"] == DEMO_ID
    # Every rejection option is last: a first-option reply never rejects.
    assert all(e["answer"] == e["options"][-1] for e in entries if e["type"] != "Solvable")


def test_first_option_text_only_gives_the_hand_computed_ori_and_ca(runs):
    results = results_of(runs["first"])
    m = metrics(results, "aqua_mmau")
    check_first_option_mmau_figures(m)
    manifest = results["configs"]["aqua_mmau"]["metadata"]["aqua_manifest"]
    assert manifest["track"] == "mmau" and manifest["data_file"] == MMAU_FILE
    printed = runs["first"].with_name("first.stdout").read_text()
    assert (
        "| aqua_mmau | 83.3 | 0.0 | 0.0 | 0.0 |" in printed
        and "| 12 | 10 | 10 | 10 | 0.0 |" in printed
    )


def test_always_reject_with_audio_hears_the_real_clip_and_has_no_ca(runs, mmau_audio):
    m = metrics(results_of(runs["reject_audio"]), "aqua_mmau")
    # The last option: never a Solvable answer here, always an AAD/IASD/IAQD one.
    assert m["acc"] == 0.0 and m["acc_aad"] == m["acc_iasd"] == m["acc_iaqd"] == 1.0
    for kind in ("aad", "iasd", "iaqd"):
        # No Solvable item right: no clip to condition on, CA undefined.
        assert m[f"n_ca_{kind}"] == 0 and math.isnan(m[f"ca_{kind}"])
    samples = [
        json.loads(line)
        for path in runs["reject_audio"].rglob("samples_aqua_mmau_*.jsonl")
        for line in path.read_text().splitlines()
    ]
    assert len(samples) == 48
    demo = [s["doc"] for s in samples if s["doc"]["audio_filename"].endswith(f"{DEMO_ID}.wav")]
    assert len(demo) == 4
    real = hashlib.sha256(DEMO_CLIP.read_bytes()).hexdigest()
    for doc in demo:
        assert Path(doc["audio_path"]) == mmau_audio / "test-mini-audios" / f"{DEMO_ID}.wav"
        assert hashlib.sha256(Path(doc["audio_path"]).read_bytes()).hexdigest() == real
        assert doc["audio_error"] == ""


def test_aqua_glob_with_mmau_built_pools_four_tracks_and_says_so(runs):
    results = results_of(runs["four"])
    assert set(results["group_subtasks"]["aqua"]) == {
        "aqua_animal",
        "aqua_mmau",
        "aqua_music",
        "aqua_vocal",
    }
    pooled = results["results"]["aqua"]
    assert pooled["alias"] == "aqua (animal+mmau+music+vocal pooled over clips)"
    assert metrics(results, "aqua")["n_solvable"] == sum(
        metrics(results, t)["n_solvable"] for t in results["group_subtasks"]["aqua"]
    )
    printed = runs["four"].with_name("four.stdout").read_text()
    assert "(aqua = animal+mmau+music+vocal)" in printed


def test_aqua_glob_with_the_released_tracks_only_leaves_mmau_out_in_one_line(
    tmp_path, released_dir, builtin_index_parsed_once, caplog
):
    with caplog.at_level(logging.WARNING):
        run = aqua_eval(
            tmp_path / "released",
            {"data_dir": str(released_dir), "audio": False},
            *("--model", "aqua-first-option", "--tasks", "aqua_*", "--limit", "4"),
        )
    results = results_of(run)
    assert "aqua_mmau" not in results["results"]
    assert results["results"]["aqua"]["alias"] == "aqua (animal+music+vocal pooled over clips)"
    left_out = [r.getMessage() for r in caplog.records if "aqua_mmau left out" in r.getMessage()]
    assert len(left_out) == 1 and "aqua build --source mmau" in left_out[0]


def test_aqua_mmau_named_without_its_file_fails_in_one_line(
    tmp_path, released_dir, builtin_index_parsed_once, capsys
):
    metadata = json.dumps({"data_dir": str(released_dir), "audio": False})
    code = cli_eval.main(
        [
            *("--model", "aqua-first-option", "--tasks", "aqua_mmau", "--metadata", metadata),
            *("--output_path", str(tmp_path)),
        ]
    )
    err = capsys.readouterr().err
    assert code != 0
    line = next(x for x in err.splitlines() if x.startswith("aqua eval:"))
    assert f"{MMAU_FILE} not found" in line and "aqua build --source mmau" in line


def test_paper_report_shows_mmau_columns_beside_the_published_rows(runs, tmp_path, capsys):
    code = cli_report.main([str(runs["four"]), "--out", str(tmp_path), "--paper", "--no-chart"])
    assert code == 0
    markdown = (tmp_path / "table.md").read_text()
    header = markdown.splitlines()[0]
    assert "| MMAU Ori | MMAU AAD | MMAU IASD | MMAU IAQD |" in header
    assert header.index("Mu Ori") < header.index("MMAU Ori") < header.index("All Ori")
    qwen = next(
        line for line in markdown.splitlines() if line.startswith("| Qwen2-Audio (published)")
    )
    assert "| 63.1 | 39.5 | 63.8 | 42.9 |" in qwen  # Table 1's MMAU columns
    assert "IAQD questions are generated by aqua build, not the authors'" in markdown
    rows = {r.split(",")[0]: r for r in (tmp_path / "table.csv").read_text().splitlines()}
    assert "mmau_ori" in rows["model"]


def test_regress_gate_reads_the_mmau_run(runs, capsys):
    code = cli_regress.main(
        ["--baseline", str(runs["first"]), "--candidate", str(runs["first"]), "--no-progress"]
    )
    out = capsys.readouterr().out
    assert code == 0 and "aqua_mmau" in out


def test_audio_paths_escaping_the_root_are_refused(tmp_path, entries, mmau_audio):
    roots = AudioRoots.from_settings({"mmau_audio_root": str(mmau_audio)})
    good = entries[8]["audio_filename"]
    assert resolve_audio("mmau", good, roots) == mmau_audio / "test-mini-audios" / Path(good).name
    for bad in ("../test-mini-audios/x.wav", "./test-mini-audios/../../x.wav", "/etc/passwd"):
        with pytest.raises(AquaDataError, match="escapes its audio root"):
            resolve_audio("mmau", bad, roots)
    tampered = [dict(e) for e in entries]
    for entry in tampered[:4]:
        entry["audio_filename"] = "../../outside.wav"
    (tmp_path / MMAU_FILE).write_text(json.dumps(tampered))
    with pytest.raises(AquaDataError, match=r"'\.\./\.\./outside\.wav' escapes its audio root"):
        build_docs("mmau", data_dir=str(tmp_path), settings={"mmau_audio_root": str(mmau_audio)})
    # Text-only, no clip is opened: the docs are built.
    assert len(build_docs("mmau", data_dir=str(tmp_path), settings={"audio": False})) == 48


def test_report_all_pools_the_released_tracks_only_and_says_so(runs, tmp_path):
    # The run pools four tracks in lm-eval's own `aqua` row (and names them); the report's
    # All is the released three in every row, so a run without MMAU reads the same.
    results = results_of(runs["four"])
    assert metrics(results, "aqua")["n_solvable"] == 8  # 2 clips (--limit 8) × 4 tracks
    released = ("aqua_animal", "aqua_music", "aqua_vocal")
    from_samples = load_run_metrics(runs["four"])
    from_results = load_run_metrics(max(runs["four"].rglob("results_*.json")))
    for run in (from_samples, from_results):
        pooled = run.tasks["aqua"]
        assert pooled["n_solvable"] == 6 == sum(run.tasks[t]["n_solvable"] for t in released)
        correct = sum(run.tasks[t]["acc"] * run.tasks[t]["n_solvable"] for t in released)
        assert pooled["acc"] == pytest.approx(correct / 6)
        assert pooled["n_ca_aad"] == sum(run.tasks[t]["n_ca_aad"] for t in released)
        assert (
            "All (aqua) pools the released tracks only (animal+music+vocal); "
            "aqua_mmau has its own columns"
        ) in run.notes
    code = cli_report.main([str(runs["four"]), "--out", str(tmp_path), "--no-chart"])
    assert code == 0
    markdown = (tmp_path / "table.md").read_text()
    assert "A built track (MMAU) is never in All" in markdown
    assert "aqua_mmau has its own columns" in markdown  # in the run's source line
    row = next(r for r in csv.DictReader(io.StringIO((tmp_path / "table.csv").read_text())))
    assert row["all_ori_n"] == "6" and row["mmau_ori_n"] == "2"


def test_regress_gate_flags_another_models_mmau_run_as_a_regression_with_its_figures(runs, capsys):
    argv = ["--baseline", str(runs["first"]), "--candidate", str(runs["reject"])]
    code = cli_regress.main([*argv, "--no-progress", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 1 and report["status"] == "regression"
    by_metric = {c["metric"]: c for c in report["comparisons"] if c["task"] == "aqua_mmau"}
    ori = by_metric["acc"]
    # Option (a) is right on 10 of the 12 Solvable items, the last option on none of them.
    assert (ori["baseline"], ori["candidate"]) == (pytest.approx(10 / 12), 0.0)
    assert ori["delta_points"] == pytest.approx(-250 / 3) and ori["n"] == 12
    assert (ori["lost"], ori["gained"]) == (10, 0)
    assert ori["p_value"] == pytest.approx(2 * 0.5**10)  # exact McNemar, 10 discordant items
    assert ori["p_holm"] == pytest.approx(5 * 2 * 0.5**10)  # Holm: 5 tested, 3 CAs untested
    assert ori["regression"] is True
    assert [m for m, c in by_metric.items() if c["regression"]] == ["acc"]
    # CA of a run that answers no Solvable item right is over no clip: never tested.
    assert by_metric["ca_aad"]["candidate"] is None
    assert by_metric["ca_aad"]["note"] == "untested: < 10 clips"
    # The other way round it is an improvement, and the gate passes.
    back = ["--baseline", str(runs["reject"]), "--candidate", str(runs["first"])]
    assert cli_regress.main([*back, "--no-progress", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["status"] == "ok"
