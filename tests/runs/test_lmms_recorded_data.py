"""An lmms-eval log read without --data-dir, and one that also holds `metric: orca` files.

The run's results record the data folder it was made from (`configs.<task>.metadata.data_dir`)
and each data file's SHA-256 (`aqua_manifest.data_sha256`): the readers use that folder when
it is there and its files hash as recorded, say so, and refuse with the reason otherwise.
`orca_*.jsonl` (per-item judge results) are named alike under both harnesses.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from aqua_tasks import runs
from aqua_tasks.cli import orca_items as cli_orca_items
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.data import TRACK_FILE_STEMS
from aqua_tasks.runs import HARNESS_LMMS_EVAL

LMMS = Path(__file__).parents[1] / "data" / "lmms_replay_legacy"
STAMP = "20261201_180306"
RESULTS = f"{STAMP}_results.json"
ANIMAL = f"{STAMP}_samples_aqua_animal.jsonl"
SCORE = ("--json", "--n-boot", "200", "--no-progress")


def with_recorded(dest: Path, data_dir: object, *, drop_sha: bool = False) -> Path:
    """The lmms-eval fixture, its results recording `data_dir` (and no hash with drop_sha)."""
    shutil.copytree(LMMS, dest)
    path = dest / RESULTS
    results = json.loads(path.read_text())
    for config in results["configs"].values():
        config["metadata"]["data_dir"] = str(data_dir)
        if drop_sha:
            config["metadata"]["aqua_manifest"].pop("data_sha256")
    path.write_text(json.dumps(results))
    return dest


def score(capsys, *args: str) -> tuple[int, str, str]:
    code = aqua_score([*args, *SCORE])
    out, err = capsys.readouterr()
    return code, out, err


def test_the_recorded_data_dir_is_used_when_its_files_hash_as_recorded(
    tmp_path, capsys, released_dir
):
    run = with_recorded(tmp_path / "run", released_dir)
    code, out, err = score(capsys, str(run))
    assert code == 0, err
    notes = [line for line in err.splitlines() if "items rebuilt" in line]
    assert len(notes) == 3  # one per task, on stderr (stdout stays JSON)
    assert notes[0] == (
        f"aqua score: aqua_animal: items rebuilt from the data_dir the run recorded, "
        f"{released_dir} ({TRACK_FILE_STEMS['animal']}.json matches the recorded SHA-256)"
    )
    recorded = json.loads(out)
    assert recorded["notes"] == [n.removeprefix("aqua score: ") for n in notes]
    code, given, _ = score(capsys, str(run), "--data-dir", str(released_dir))
    assert code == 0 and json.loads(given)["results"] == recorded["results"]
    assert json.loads(given)["notes"] == []
    # The other readers of runs use it too.
    assert runs.read_run(run).notes == tuple(recorded["notes"])
    code = cli_report.main([str(run), "--no-chart", "--json", "--out", str(tmp_path / "rep")])
    assert code == 0
    assert recorded["notes"][0] in json.loads(capsys.readouterr().out)["sources"][0]
    code = cli_regress.main(["--baseline", str(run), "--candidate", str(run), *SCORE])
    out, err = capsys.readouterr()
    assert code == 0 and json.loads(out)["status"] == "ok"
    assert f"aqua regress: {recorded['notes'][0]}" in err.splitlines()
    items = tmp_path / "items.jsonl"
    assert cli_orca_items.main([str(run / ANIMAL), "--output", str(items)]) == 0
    assert recorded["notes"][0] in capsys.readouterr().err
    assert len(items.read_text().splitlines()) == 8


def changed(released_dir: Path, dest: Path) -> Path:
    shutil.copytree(released_dir, dest)
    path = dest / f"{TRACK_FILE_STEMS['animal']}.json"
    entries = json.loads(path.read_text())
    entries[0]["audio_filename"] = entries[0]["audio_filename"].replace(".wav", "-x.wav")
    path.write_text(json.dumps(entries))
    return dest


def test_a_recorded_data_dir_that_changed_since_the_run_is_refused_with_the_hashes(
    tmp_path, capsys, released_dir
):
    data = changed(released_dir, tmp_path / "data")
    run = with_recorded(tmp_path / "run", data)
    code, _, err = score(capsys, str(run))
    assert code == 2
    (line,) = err.splitlines()
    animal = data / f"{TRACK_FILE_STEMS['animal']}.json"
    assert (
        f"{ANIMAL}: an lmms-eval log of aqua_animal; {animal} in the data_dir it recorded" in line
    )
    assert "(changed since the run); pass --data-dir" in line


@pytest.mark.parametrize(
    ("recorded", "drop_sha", "message"),
    [
        ("{tmp}/gone", False, "the data_dir it recorded, {tmp}/gone, is not a folder here"),
        ("{data}", True, "it records data_dir {data} but no data_sha256 to check"),
    ],
)
def test_a_recorded_data_dir_that_cannot_be_checked_is_refused(
    tmp_path, capsys, released_dir, recorded, drop_sha, message
):
    fill = {"tmp": tmp_path, "data": released_dir}
    run = with_recorded(tmp_path / "run", recorded.format(**fill), drop_sha=drop_sha)
    code, _, err = score(capsys, str(run))
    assert code == 2
    assert message.format(**fill) in err and "pass --data-dir" in err


def judge_rows(task: str, n: int) -> list[dict]:
    """Per-item rows as `metric: orca` writes them (orca_judge.metric.per_item)."""
    judge = {"checkpoint": "judges/tiny", "fingerprint": "f" * 16, "clamp": True}
    return [
        {
            "task": task,
            "filter": "none",
            "index": i,
            "inputs": {"id": i, "question": f"q{i}", "candidate": "c", "reference": "r"},
            "seen": ["question", "candidate", "reference"],
            "judge": judge,
            "orca": 0.1 * i,
            "expected_unit": 0.1 * i,
        }
        for i in range(n)
    ]


def test_judge_files_beside_an_lmms_eval_run_are_that_runs_not_lm_evals(tmp_path, capsys):
    run = with_recorded(tmp_path / "run", "DATA")
    judged = run / "orca_aqua_animal_none_2026-12-01T18-03-06.123456.jsonl"
    judged.write_text("".join(json.dumps(r) + "\n" for r in judge_rows("aqua_animal", 8)))
    files = runs.find_outputs(run)
    assert files.harness == HARNESS_LMMS_EVAL
    assert [f.path for f in files.judges] == [judged]
    # Only judge files (a run without --log_samples) read as before.
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copyfile(judged, alone / judged.name)
    assert runs.find_outputs(alone).judges[0].path == alone / judged.name


def test_aqua_regress_compares_an_lmms_eval_run_with_judge_files(tmp_path, capsys, released_dir):
    run = with_recorded(tmp_path / "run", released_dir)
    judged = run / "orca_aqua_animal_none_2026-12-01T18-03-06.123456.jsonl"
    judged.write_text("".join(json.dumps(r) + "\n" for r in judge_rows("aqua_animal", 8)))
    code = cli_regress.main(["--baseline", str(run), "--candidate", str(run), *SCORE])
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and out["status"] == "ok", out
    assert out["baseline"]["harness"] == HARNESS_LMMS_EVAL
    judged_rows = [c for c in out["comparisons"] if c["metric"] == "orca,none"]
    assert [(c["task"], pytest.approx(c["baseline"])) for c in judged_rows] == [
        ("aqua_animal", 0.35)  # the mean of the rows' scores 0, 0.1, …, 0.7
    ]
