"""lmms-eval logs read like lm-eval's: detection, items rebuilt by doc id, checks, same numbers.

`tests/data/lmms_replay_legacy` is a real lmms-eval run that replayed the replies of
`tests/data/legacy_run_0_1_0` (a real lm-eval run), so both hold the same replies to the same
items (see tests/data/README.md).
"""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import pytest

from aqua_tasks import runs
from aqua_tasks.cli import orca_items as cli_lm_eval_items
from aqua_tasks.cli import regress as cli_regress
from aqua_tasks.cli import report as cli_report
from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.data import TRACK_FILE_STEMS
from aqua_tasks.core.task_name import TaskName, choice_task
from aqua_tasks.errors import AmbiguousRunError, RunError
from aqua_tasks.runs import HARNESS_LM_EVAL, HARNESS_LMMS_EVAL

DATA = Path(__file__).parents[1] / "data"
LEGACY = DATA / "legacy_run_0_1_0"
LMMS = DATA / "lmms_replay_legacy"
LMMS_STAMP = "20261201_180306"
ANIMAL = f"{LMMS_STAMP}_samples_aqua_animal.jsonl"
TRACKS = ("aqua_animal", "aqua_music", "aqua_vocal")


def score_json(capsys, *args: str) -> dict:
    assert aqua_score([*args, "--json", "--n-boot", "200", "--no-progress"]) == 0, (
        capsys.readouterr().err
    )
    return json.loads(capsys.readouterr().out)


def one_line_error(capsys, main, args: list[str], prog: str) -> str:
    assert main(args) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"{prog}: error: "), err
    return err[0]


def copy_run(dest: Path, edit_animal=None) -> Path:
    """The lmms-eval fixture copied, the animal rows passed through `edit_animal`."""
    shutil.copytree(LMMS, dest)
    if edit_animal is not None:
        path = dest / ANIMAL
        rows = [json.loads(line) for line in path.read_text().splitlines()]
        path.write_text("".join(json.dumps(r) + "\n" for r in edit_animal(rows)))
    return dest


def test_same_replies_give_identical_numbers_under_lm_eval_and_lmms_eval(capsys, released_dir):
    lm_eval = score_json(capsys, str(LEGACY))
    lmms = score_json(capsys, str(LMMS), "--data-dir", str(released_dir))
    assert (lm_eval["harness"], lmms["harness"]) == (HARNESS_LM_EVAL, HARNESS_LMMS_EVAL)
    assert set(lmms["results"]) == {*TRACKS, "aqua"}
    assert lmms["results"] == lm_eval["results"]
    assert lmms["intervals"] == lm_eval["intervals"]
    assert lmms["extractor"] == lm_eval["extractor"]
    # The figures lmms-eval itself computed in the run are aqua score's.
    recorded = json.loads((LMMS / f"{LMMS_STAMP}_results.json").read_text())["results"]
    for task in TRACKS:
        for metric in ("acc", "ca_aad", "ca_iasd", "ca_iaqd", "n_items", "unparsed_rate"):
            ours = lmms["results"][task][metric]  # NaN is written as null
            assert recorded[task][f"{metric},none"] == pytest.approx(
                math.nan if ours is None else ours, nan_ok=True
            ), (task, metric)
    assert lmms["results"]["aqua_vocal"]["acc"] == 0.5
    assert lmms["results"]["aqua_animal"]["n_items"] == 8


def test_per_item_rows_are_the_same_under_both_harnesses(tmp_path, released_dir, capsys):
    for name, run, extra in (
        ("lm", LEGACY, []),
        ("lmms", LMMS, ["--data-dir", str(released_dir)]),
    ):
        score_json(capsys, str(run), *extra, "--per-item", str(tmp_path / f"{name}.jsonl"))
    rows = {}
    for name in ("lm", "lmms"):
        lines = (tmp_path / f"{name}.jsonl").read_text().splitlines()
        # The fixture of 0.1.0 had the machine part of its docs' audio paths (the clip names)
        # rewritten; the rebuilt items carry the released ones.
        rows[name] = [
            {k: v for k, v in json.loads(x).items() if k not in ("manifest", "clip")} for x in lines
        ]
    assert rows["lm"] == rows["lmms"] and len(rows["lm"]) == 24


def test_an_lmms_eval_log_without_data_dir_asks_for_it(capsys):
    err = one_line_error(capsys, aqua_score, [str(LMMS)], "aqua score")
    # The fixture recorded data_dir DATA, a folder of the machine it ran on.
    assert f"{ANIMAL}: an lmms-eval log of aqua_animal; the data_dir it recorded, DATA, " in err
    assert "is not a folder here; pass --data-dir" in err


def test_lmms_eval_outputs_are_told_from_lm_eval_by_name_and_rows(tmp_path):
    files = runs.find_outputs(LMMS)
    assert files.harness == HARNESS_LMMS_EVAL
    assert sorted(f.name for f in files.samples) == list(TRACKS)
    assert [r.path.name for r in files.results] == [f"{LMMS_STAMP}_results.json"]
    assert runs.find_outputs(LEGACY).harness == HARNESS_LM_EVAL
    # A results file brings its evaluation's samples; lmms-eval's folder per model is found.
    assert len(runs.find_outputs(LMMS / f"{LMMS_STAMP}_results.json").samples) == 3
    nested = tmp_path / "out"
    shutil.copytree(LMMS, nested / "aqua-replay")
    assert runs.find_outputs(nested).folder == nested / "aqua-replay"
    # A renamed samples file is still recognised by its rows, but its task is then unknown.
    renamed = tmp_path / "replies.jsonl"
    shutil.copyfile(LMMS / ANIMAL, renamed)
    assert runs.find_outputs(renamed).harness == HARNESS_LMMS_EVAL
    with pytest.raises(RunError, match="keep lmms-eval's file name"):
        runs.read_run(renamed, data_dir=tmp_path)
    # Under an lm-eval file name its rows say what they are.
    misnamed = tmp_path / "samples_aqua_animal_2026-12-01T03-08-18.jsonl"
    shutil.copyfile(LMMS / ANIMAL, misnamed)
    with pytest.raises(RunError, match="an lmms-eval row: keep lmms-eval's file name"):
        runs.read_run(misnamed)
    mixed = tmp_path / "mixed"
    shutil.copytree(LMMS, mixed)
    for path in LEGACY.iterdir():
        shutil.copyfile(path, mixed / path.name)
    with pytest.raises(AmbiguousRunError, match="both lm-eval and lmms-eval"):
        runs.find_outputs(mixed)


def test_rebuilt_items_are_the_released_docs_in_file_order(released_dir):
    run = runs.read_run(LMMS, data_dir=released_dir)
    assert run.harness == HARNESS_LMMS_EVAL and run.label.startswith("aqua-replay")
    animal = [i for i in run.aqua_items if i.task == "aqua_animal"]
    assert [i.doc_id for i in animal] == list(range(8)) == [i.item.id for i in animal]
    first = animal[0]
    assert first.item.answer == "Dog" and first.reply == "(a) Rooster"
    assert first.manifest["data_file"] == f"{TRACK_FILE_STEMS['animal']}.json"
    assert first.manifest["extractor_version"] == "2.0" and first.extractor == "aqua-rules"
    # The logged doc_hash is lmms-eval's constant; the rebuilt content's hash stands in for it.
    assert len({i.doc_hash for i in animal}) == 8
    # The prompt hashes as lm-eval logs the same prompt (with its audio placeholder).
    legacy = runs.read_run(LEGACY)
    assert {i.key: i.prompt_hash for i in legacy.aqua_items} == {
        i.key: i.prompt_hash for i in run.aqua_items
    }
    cot = choice_task("aqua-cot_music")
    assert cot == TaskName("aqua-cot", "music")
    assert (cot.track, cot.variant, cot.prompt_style) == ("music", "main", "cot")
    assert choice_task("mmlu") is None


def _edit_first(field: str, value: object):
    def edit(rows: list[dict]) -> list[dict]:
        return [{**rows[0], field: value}, *rows[1:]]

    return edit


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("target", "(a) Rooster", f"{ANIMAL}:1: field 'target' is '(a) Rooster' but doc 0 of"),
        ("doc_id", 1440, f"{ANIMAL}:1: field 'doc_id' is 1440 but AQUA-Bench-Animal-Sounds-Track"),
        ("doc_id", "0", f"{ANIMAL}:1: field 'doc_id' must be an integer, got '0'"),
        ("input", "Which music?", f"{ANIMAL}:1: field 'input' does not hold the question of doc 0"),
        ("filtered_resps", {"a": 1}, f"{ANIMAL}:1: field 'filtered_resps' must be one reply"),
    ],
)
def test_rows_the_data_does_not_match_are_refused(
    tmp_path, capsys, released_dir, field, value, message
):
    run = copy_run(tmp_path / "run", _edit_first(field, value))
    err = one_line_error(
        capsys, aqua_score, [str(run), "--data-dir", str(released_dir)], "aqua score"
    )
    assert message in err


def test_a_row_twice_is_refused(tmp_path, capsys, released_dir):
    run = copy_run(tmp_path / "run", lambda rows: [*rows, rows[0]])
    err = one_line_error(
        capsys, aqua_score, [str(run), "--data-dir", str(released_dir)], "aqua score"
    )
    assert "aqua_animal has 1 items more than once (id 0)" in err


def changed_data(released_dir: Path, dest: Path) -> Path:
    """The released files with one animal entry's audio file name changed (nothing logged)."""
    shutil.copytree(released_dir, dest)
    path = dest / f"{TRACK_FILE_STEMS['animal']}.json"
    entries = json.loads(path.read_text())
    entries[0]["audio_filename"] = entries[0]["audio_filename"].replace(".wav", "-x.wav")
    path.write_text(json.dumps(entries))
    return dest


def test_a_data_folder_other_than_the_recorded_one_is_refused(tmp_path, capsys, released_dir):
    data = changed_data(released_dir, tmp_path / "data")
    err = one_line_error(capsys, aqua_score, [str(LMMS), "--data-dir", str(data)], "aqua score")
    assert f"{LMMS_STAMP}_results.json: field 'data_sha256' of task aqua_animal is" in err
    assert "pass the --data-dir the run used" in err


def test_aqua_report_reads_an_lmms_eval_run_like_the_lm_eval_one(tmp_path, capsys, released_dir):
    def report(run: Path, *extra: str) -> dict:
        args = [str(run), *extra, "--no-chart", "--json", "--n-boot", "200"]
        assert cli_report.main([*args, "--out", str(tmp_path / run.name)]) == 0
        return json.loads(capsys.readouterr().out)

    lmms = report(LMMS, "--data-dir", str(released_dir))
    lm_eval = report(LEGACY)
    (row,), (legacy_row,) = lmms["rows"], lm_eval["rows"]
    assert row["harness"] == HARNESS_LMMS_EVAL and legacy_row["harness"] == HARNESS_LM_EVAL
    assert row["cells"] == legacy_row["cells"]
    assert row["cells"]["vocal"]["Ori"]["value"] == 50.0
    assert "[lmms-eval] (items rebuilt by doc id from" in lmms["sources"][0]
    err = one_line_error(capsys, cli_report.main, [str(LMMS), "--no-chart"], "aqua report")
    assert "pass --data-dir" in err


def regress(capsys, *args: str) -> tuple[int, dict]:
    code = cli_regress.main([*args, "--json", "--n-boot", "200", "--no-progress"])
    return code, json.loads(capsys.readouterr().out)


def test_aqua_regress_compares_lmms_eval_runs_and_names_the_harness(tmp_path, capsys, released_dir):
    data = ["--data-dir", str(released_dir)]
    code, out = regress(capsys, "--baseline", str(LMMS), "--candidate", str(LMMS), *data)
    assert code == 0 and out["status"] == "ok" and len(out["comparisons"]) == 24
    assert out["baseline"]["harness"] == out["candidate"]["harness"] == HARNESS_LMMS_EVAL
    # Fewer items in the candidate (another --limit): refused, by the rebuilt item ids.
    fewer = copy_run(tmp_path / "fewer", lambda rows: rows[:4])
    code, out = regress(capsys, "--baseline", str(LMMS), "--candidate", str(fewer), *data)
    assert code == 2 and out["reason"].startswith("aqua_animal: different items (4 only in")


def test_aqua_regress_refuses_runs_over_a_changed_dataset(tmp_path, capsys, released_dir):
    # The candidate ran on a changed release: its results record that file's hash.
    data = changed_data(released_dir, tmp_path / "data")
    new_sha = runs.read_run(copy_run(tmp_path / "probe"), data_dir=released_dir).aqua_items[0]
    candidate = copy_run(tmp_path / "cand")
    results = candidate / f"{LMMS_STAMP}_results.json"
    payload = json.loads(results.read_text())
    manifest = payload["configs"]["aqua_animal"]["metadata"]["aqua_manifest"]
    from aqua_tasks.core.manifest import sha256_file

    manifest["data_sha256"] = sha256_file(data / f"{TRACK_FILE_STEMS['animal']}.json")
    assert manifest["data_sha256"] != new_sha.manifest["data_sha256"]
    results.write_text(json.dumps(payload))
    code, out = regress(
        capsys,
        "--baseline",
        str(LMMS),
        "--candidate",
        str(candidate),
        "--baseline-data-dir",
        str(released_dir),
        "--candidate-data-dir",
        str(data),
    )
    assert code == 2 and out["reason"].startswith("aqua_animal: data_sha256 differs")
    # Read against the baseline's data, the candidate's log is refused outright.
    assert (
        cli_regress.main(
            [
                "--baseline",
                str(LMMS),
                "--candidate",
                str(candidate),
                "--data-dir",
                str(released_dir),
            ]
        )
        == 2
    )
    assert "field 'data_sha256' of task aqua_animal" in capsys.readouterr().err


def test_orca_items_of_an_lmms_eval_aqua_log_equal_the_lm_eval_ones(tmp_path, capsys, released_dir):
    lm_eval = tmp_path / "lm.jsonl"
    lmms = tmp_path / "lmms.jsonl"
    legacy_samples = next(LEGACY.glob("samples_aqua_animal_*.jsonl"))
    assert cli_lm_eval_items.main([str(legacy_samples), "--output", str(lm_eval)]) == 0
    args = [str(LMMS / ANIMAL), "--output", str(lmms), "--data-dir", str(released_dir)]
    assert cli_lm_eval_items.main(args) == 0
    assert "8 items (lmms-eval samples)" in capsys.readouterr().out
    read = [[json.loads(x) for x in p.read_text().splitlines()] for p in (lm_eval, lmms)]
    assert read[0] == read[1] and read[1][0]["reference"] == "(c) Dog"
    err = one_line_error(
        capsys,
        cli_lm_eval_items.main,
        [str(LMMS / ANIMAL), "--output", str(lmms)],
        "aqua orca-items",
    )
    assert "an lmms-eval log of aqua_animal; the data_dir it recorded, DATA, is not" in err
    assert "pass --data-dir" in err


def write_open_ended_log(folder: Path) -> tuple[Path, Path]:
    """lmms-eval rows of an open-ended task, in the layout lmms-eval 0.7.3 writes, and its docs."""
    folder.mkdir(parents=True, exist_ok=True)
    docs = [
        {"id": "q1", "question": "What makes the sound?", "answer": "a dog"},
        {"id": "q2", "question": "Is it indoors?", "answer": "no"},
    ]
    docs_file = folder / "docs.jsonl"
    docs_file.write_text("".join(json.dumps(d) + "\n" for d in docs))
    rows = [
        {
            "doc_id": i,
            "target": d["answer"],
            "filtered_resps": f"reply {i}",
            "token_counts": [None],
            "doc_hash": "74234e98afe7498fb5daf1f36ac2d78acc339464f950703b8c019892f982b90b",
            "input": f"Listen. {d['question']}",
        }
        for i, d in enumerate(docs)
    ]
    samples = folder / "20261201_120000_samples_clip_qa.jsonl"
    samples.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return samples, docs_file


def test_orca_items_of_another_lmms_eval_task_rebuild_docs_from_its_data_file(tmp_path, capsys):
    samples, docs_file = write_open_ended_log(tmp_path)
    out = tmp_path / "items.jsonl"
    assert (
        cli_lm_eval_items.main([str(samples), "--output", str(out), "--docs", str(docs_file)]) == 0
    )
    items = [json.loads(x) for x in out.read_text().splitlines()]
    assert [(i["id"], i["question"], i["reference"], i["candidate"]) for i in items] == [
        ("q1", "What makes the sound?", "a dog", "reply 0"),
        ("q2", "Is it indoors?", "no", "reply 1"),
    ]
    capsys.readouterr()
    err = one_line_error(
        capsys, cli_lm_eval_items.main, [str(samples), "--output", str(out)], "aqua orca-items"
    )
    assert "pass --docs, the task's data file" in err
    docs_file.write_text("".join(reversed(docs_file.read_text().splitlines(True))))
    err = one_line_error(
        capsys,
        cli_lm_eval_items.main,
        [str(samples), "--output", str(out), "--docs", str(docs_file)],
        "aqua orca-items",
    )
    assert f"{samples.name}:1: field 'input' does not hold doc 0's 'question'" in err


def test_aqua_replay_replays_an_lmms_eval_log_given_its_data(released_dir):
    from aqua_tasks.models.baselines import ReplayLM

    legacy = ReplayLM(path=str(LEGACY)).replies
    assert ReplayLM(path=str(LMMS), data_dir=str(released_dir)).replies == legacy
    with pytest.raises(RunError, match="pass --data-dir"):
        ReplayLM(path=str(LMMS))


def rerun_of_animal(run: Path, model: str) -> None:
    """A later lmms-eval run of aqua_animal only, written into the same folder by `model`."""
    later = "20261201_190000"
    results = json.loads((run / f"{LMMS_STAMP}_results.json").read_text())
    results["config"]["model"] = model
    (run / f"{later}_results.json").write_text(json.dumps(results))
    shutil.copyfile(run / ANIMAL, run / f"{later}_samples_aqua_animal.jsonl")


def test_newest_samples_of_another_model_in_the_same_folder_are_refused(
    tmp_path, capsys, released_dir
):
    # lmms-eval writes every model run without model_args into the output folder itself: the
    # newest animal samples of another model must not be pooled with this run's other tracks.
    run = copy_run(tmp_path / "run")
    recorded = json.loads((run / f"{LMMS_STAMP}_results.json").read_text())["config"]["model"]
    rerun_of_animal(run, "aqua-first-option")
    err = one_line_error(
        capsys, aqua_score, [str(run), "--data-dir", str(released_dir)], "aqua score"
    )
    assert "runs of different models" in err
    assert "aqua-first-option" in err and recorded in err
    # A rerun of one task by the same model is combined, as before.
    same = copy_run(tmp_path / "same")
    rerun_of_animal(same, recorded)
    assert score_json(capsys, str(same), "--data-dir", str(released_dir))["harness"] == (
        HARNESS_LMMS_EVAL
    )
