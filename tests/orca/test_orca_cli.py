"""orca train and orca score end to end on the tiny offline backbone."""

import builtins
import errno
import io
import json
from pathlib import Path

import pytest
import yaml
from orca_fixtures import synthetic_items, tiny_llama_dir, tiny_trained_checkpoint, write_jsonl

from orca_judge.cli import score as cli_score
from orca_judge.cli import train as cli_train

REPO = Path(__file__).resolve().parents[2]
TINY = [
    "--lora-r",
    "4",
    "--batch-size",
    "8",
    "--grad-accum",
    "1",
    "--warmup-steps",
    "2",
    "--eval-every",
    "3",
    "--no-progress",
]


@pytest.mark.slow
def test_orca_train_writes_a_checkpoint_and_reports_held_out_metrics(tmp_path, capsys):
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_items(48, 1, "tr"))
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_items(30, 2, "dv"))
    code = cli_train.main(
        [
            "--train",
            str(train),
            "--dev",
            str(dev),
            "--backbone",
            str(tiny_llama_dir()),
            "--output",
            str(tmp_path / "ckpt"),
            "--max-steps",
            "6",
            "--heldout-fraction",
            "0.5",
            "--lr",
            "1e-3",
            "--json",
            *TINY,
        ]
    )
    assert code == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["stages"][0]["steps"] == 6 and summary["heldout"]["n"] > 0
    stored = json.loads((tmp_path / "ckpt" / "metrics.json").read_text())
    assert stored["heldout"]["raw"]["rho"] == summary["heldout"]["raw"]["rho"]
    assert stored["dev"]["n"] + summary["heldout"]["n"] == 30


@pytest.mark.slow
def test_orca_train_runs_a_curriculum_from_yaml_with_flags_overriding_it(tmp_path, capsys):
    write_jsonl(tmp_path / "train.jsonl", synthetic_items(32, 1, "tr"))
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(16, 2, "dv"))
    config = {
        "backbone": str(tiny_llama_dir()),
        "dev": "dev.jsonl",
        "max_steps": 3,
        "stages": [
            {"name": "a", "train": "train.jsonl", "lr": 5e-4},
            {"name": "b", "train": "train.jsonl"},
        ],
    }
    (tmp_path / "cur.yaml").write_text(yaml.safe_dump(config))
    code = cli_train.main(
        [
            "--config",
            str(tmp_path / "cur.yaml"),
            "--output",
            str(tmp_path / "out"),
            "--max-steps",
            "2",
            *TINY,
        ]
    )
    assert code == 0
    assert [line.split(":")[0] for line in capsys.readouterr().out.splitlines()[:2]] == ["a", "b"]
    stage_a = json.loads((tmp_path / "out-stages" / "a" / "training_args.json").read_text())
    stage_b = json.loads((tmp_path / "out" / "training_args.json").read_text())
    assert (stage_a["lr"], stage_a["max_steps"]) == (5e-4, 2)
    assert (stage_b["lr"], stage_b["max_steps"]) == (2e-4, 2)


def test_orca_train_bad_ratings_exit_nonzero_with_a_one_line_reason(tmp_path, capsys):
    bad = synthetic_items(3, 1)
    bad[2]["ratings"] = [0, 3]
    train = write_jsonl(tmp_path / "train.jsonl", bad)
    code = cli_train.main(
        [
            "--train",
            str(train),
            "--dev",
            str(train),
            "--backbone",
            "x",
            "--output",
            str(tmp_path / "o"),
        ]
    )
    err = capsys.readouterr().err.strip()
    assert (
        code == 2
        and err
        == f"orca train: error: {train}:3: field 'ratings' has 0; ratings must be integers 1..5"
    )


def test_orca_score_writes_predictions_and_reports_agreement_on_rated_items(tmp_path, capsys):
    items = synthetic_items(10, 4, "x")
    for item in items[:3]:
        del item["ratings"]
    path = write_jsonl(tmp_path / "items.jsonl", items)
    code = cli_score.main(
        [
            "--checkpoint",
            str(tiny_trained_checkpoint()),
            "--input",
            str(path),
            "--output",
            str(tmp_path / "pred.jsonl"),
            "--json",
            "--no-progress",
        ]
    )
    assert code == 0
    out = json.loads(capsys.readouterr().out)
    rows = [json.loads(x) for x in (tmp_path / "pred.jsonl").read_text().splitlines()]
    assert (
        [r["id"] for r in rows]
        == [it["id"] for it in items]
        == [p["id"] for p in out["predictions"]]
    )
    assert all(1 <= r["expected"] <= 5 and len(r["distribution"]["probs"]) == 5 for r in rows)
    report = out["report"]
    assert (
        report["n"] == 7
        and report["skipped"] == 3
        and report["skipped_ids"] == ["x-0", "x-1", "x-2"]
    )
    assert set(report["raw"]) >= {"rho", "tau", "mae_mu", "mae_var"} and "clamped" in report


def test_orca_score_text_output_and_missing_checkpoint_error(tmp_path, capsys):
    path = write_jsonl(tmp_path / "items.jsonl", synthetic_items(4, 4, "x"))
    assert (
        cli_score.main(
            ["--checkpoint", str(tiny_trained_checkpoint()), "--input", str(path), "--no-progress"]
        )
        == 0
    )
    text = capsys.readouterr().out
    assert "scored 4 items" in text and "raw      rho" in text
    code = cli_score.main(["--checkpoint", str(tmp_path / "nope"), "--input", str(path)])
    assert code == 2 and "nope" in capsys.readouterr().err


class _DiskFillsUp:
    """A writable file that takes half of what it is given, then fails like a full disk."""

    def __init__(self, handle):
        self._handle = handle

    def write(self, text):
        self._handle.write(text[: len(text) // 2])
        self._handle.flush()
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self._handle, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self._handle.close()


@pytest.mark.slow
def test_orca_train_disk_full_while_adding_held_out_metrics_keeps_metrics_json_intact(
    tmp_path, monkeypatch, capsys
):
    import orca_judge.judge as judge_module

    train = write_jsonl(tmp_path / "train.jsonl", synthetic_items(32, 1, "tr"))
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_items(20, 2, "dv"))
    real_open, real_score, armed, seen = io.open, judge_module.OrcaJudge.score, [], {}

    def open_after_scoring(file, mode="r", *args, **kwargs):
        handle = real_open(file, mode, *args, **kwargs)
        return _DiskFillsUp(handle) if armed and "w" in mode else handle

    def score_then_fill_the_disk(self, *args, **kwargs):
        # Everything training wrote is in place now; remember it, then fail the next writes.
        out = tmp_path / "ckpt"
        seen.update({p.name: p.read_bytes() for p in out.iterdir() if p.is_file()})
        armed.append(True)
        return real_score(self, *args, **kwargs)

    monkeypatch.setattr(io, "open", open_after_scoring)
    monkeypatch.setattr(builtins, "open", open_after_scoring)
    monkeypatch.setattr(judge_module.OrcaJudge, "score", score_then_fill_the_disk)
    argv = ["--train", str(train), "--dev", str(dev), "--backbone", str(tiny_llama_dir())]
    argv += ["--output", str(tmp_path / "ckpt"), "--max-steps", "3", "--heldout-fraction", "0.5"]
    assert cli_train.main([*argv, *TINY]) == 2
    monkeypatch.undo()
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line == f"orca train: error: disk full writing {tmp_path / 'ckpt' / 'metrics.json'}"
    after = {p.name: p.read_bytes() for p in (tmp_path / "ckpt").iterdir() if p.is_file()}
    assert after == seen and "heldout" not in json.loads(after["metrics.json"])
    assert not [p for p in tmp_path.rglob("*") if p.name.endswith(".tmp")]


def test_orca_train_boolean_flags_take_the_shared_spellings(tmp_path, capsys):
    args = cli_train.build_parser().parse_args(["--output", "o", "--use-question", "OFF"])
    assert args.use_question is False
    assert (
        cli_train.build_parser()
        .parse_args(["--output", "o", "--use-rationale", "none"])
        .use_rationale
        is None
    )
    with pytest.raises(SystemExit) as exit_info:
        cli_train.main(["--output", str(tmp_path / "o"), "--use-question", "perhaps"])
    assert exit_info.value.code == 2
    assert "argument --use-question: expected true/false, yes/no, on/off or 1/0, got 'perhaps'" in (
        capsys.readouterr().err
    )
