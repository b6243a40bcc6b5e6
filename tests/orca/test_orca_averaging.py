"""Evaluation checkpoints kept by the trainer, and checkpoint averaging (orca average)."""

import json
import shutil
import subprocess
import sys

import pytest
import torch
from orca_fixtures import synthetic_items, tiny_config, tiny_llama_dir, tiny_training, write_jsonl
from safetensors.torch import load_file

from orca_judge import OrcaJudge
from orca_judge.cli import average as cli_average
from orca_judge.cli import train as cli_train
from orca_judge.data import load_items
from orca_judge.training.averaging import average_checkpoints, average_lora
from orca_judge.training.loop import train

pytestmark = pytest.mark.slow  # tiny judges trained for real, several times
TRAIN = load_items(synthetic_items(64, 1, "tr"))
DEV = load_items(synthetic_items(24, 2, "dv"))


def _steps(run_dir):
    return sorted(p.name for p in (run_dir / "evaluations").iterdir())


def _head(path):
    return load_file(path / "head.safetensors")


def _adapter(path):
    return load_file(path / "adapter" / "adapter_model.safetensors")


class Interrupt(Exception):
    pass


@pytest.fixture(scope="module")
def kept_run(tmp_path_factory):
    """A run that kept its last three evaluation checkpoints (steps 4, 6, 8)."""
    root = tmp_path_factory.mktemp("kept")
    cfg, training = tiny_config(), tiny_training(max_steps=8, eval_every=2)
    result = train(
        cfg, TRAIN, DEV, root / "judge", training=training, progress=False, keep_evaluations=3
    )
    return root, result


def test_the_last_n_evaluation_checkpoints_are_kept_with_their_step_and_dev_metrics(kept_run):
    root, result = kept_run
    run_dir = root / "judge-run"
    assert _steps(run_dir) == ["step-000004", "step-000006", "step-000008"]
    log = [json.loads(x) for x in (run_dir / "log.jsonl").read_text().splitlines()]
    dev_rho = {r["step"]: r["dev"]["rho"] for r in log if "dev" in r}
    for step in (4, 6, 8):
        metrics = json.loads(
            (run_dir / "evaluations" / f"step-{step:06d}" / "metrics.json").read_text()
        )
        assert metrics["step"] == step and metrics["dev"]["rho"] == pytest.approx(dev_rho[step])
    # the tiny judge peaks inside the kept window; the best checkpoint is that step's snapshot
    assert result.best_step in (4, 6, 8)
    best = run_dir / "evaluations" / f"step-{result.best_step:06d}"
    assert torch.equal(_head(best)["weight"], _head(root / "judge")["weight"])
    judge = OrcaJudge.from_pretrained(run_dir / "evaluations" / "step-000008")
    assert len(judge.score(DEV[:3], progress=False)) == 3


def test_a_resumed_run_keeps_the_same_evaluation_checkpoints(kept_run, tmp_path):
    root, _ = kept_run
    cfg, training = tiny_config(), tiny_training(max_steps=8, eval_every=2)

    def stop_at_seven(step, record):
        if step == 7:
            raise Interrupt

    with pytest.raises(Interrupt):
        train(
            cfg,
            TRAIN,
            DEV,
            tmp_path / "cut",
            training=training,
            progress=False,
            on_step=stop_at_seven,
            keep_evaluations=3,
        )
    # a snapshot newer than the resume state (a crash between the two writes) is dropped
    stray = tmp_path / "cut-run" / "evaluations" / "step-000007"
    shutil.copytree(tmp_path / "cut-run" / "evaluations" / "step-000006", stray)
    (tmp_path / "cut-run" / "evaluations" / ".step-000008.tmp-abcdefgh").mkdir()
    train(cfg, TRAIN, DEV, tmp_path / "cut", training=training, progress=False, keep_evaluations=3)
    assert _steps(tmp_path / "cut-run") == ["step-000004", "step-000006", "step-000008"]
    for step in ("step-000004", "step-000006", "step-000008"):
        full = _adapter(root / "judge-run" / "evaluations" / step)
        cut = _adapter(tmp_path / "cut-run" / "evaluations" / step)
        assert all(torch.equal(full[k], cut[k]) for k in full)


def test_a_fresh_run_refuses_evaluation_checkpoints_of_another_run(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=2, eval_every=2)
    # what a run killed before its first resume state leaves is replaced without asking
    (tmp_path / "judge-run" / "evaluations" / "step-000000").mkdir(parents=True)
    (tmp_path / "judge-run" / "evaluations" / ".step-000000.tmp-abcdefgh").mkdir()
    train(
        cfg, TRAIN, DEV, tmp_path / "judge", training=training, progress=False, keep_evaluations=1
    )
    shutil.rmtree(tmp_path / "judge")
    (tmp_path / "judge-run" / "state.pt").unlink()
    stray = tmp_path / "judge-run" / "evaluations" / "step-000002"
    assert (stray / "orca_judge.json").exists()
    with pytest.raises(ValueError, match="evaluation checkpoints of an earlier run"):
        train(
            cfg,
            TRAIN,
            DEV,
            tmp_path / "judge",
            training=training,
            progress=False,
            keep_evaluations=1,
        )
    assert (stray / "orca_judge.json").exists()  # refused: nothing was removed
    train(
        cfg,
        TRAIN,
        DEV,
        tmp_path / "judge",
        training=training,
        progress=False,
        keep_evaluations=1,
        overwrite=True,
    )
    assert _steps(tmp_path / "judge-run") == ["step-000002"]


def test_orca_train_keep_evaluations_flag(tmp_path):
    data = write_jsonl(tmp_path / "train.jsonl", synthetic_items(32, 1, "tr"))
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_items(20, 2, "dv"))
    code = cli_train.main(
        [
            "--train", str(data), "--dev", str(dev), "--backbone", str(tiny_llama_dir()),
            "--output", str(tmp_path / "j"), "--max-steps", "4", "--eval-every", "2",
            "--lora-r", "4", "--warmup-steps", "1", "--grad-accum", "1", "--no-progress",
            "--keep-evaluations", "2",
        ]
    )  # fmt: skip
    assert code == 0
    assert _steps(tmp_path / "j-run") == ["step-000002", "step-000004"]


def _lora_pair(b, a):
    return {"m.lora_A.weight": a, "m.lora_B.weight": b, "m.bias": torch.ones(3)}


def test_lora_average_is_the_best_rank_r_factorisation_of_the_mean_update():
    gen = torch.Generator().manual_seed(0)
    states = [
        _lora_pair(torch.randn(12, 2, generator=gen), torch.randn(2, 9, generator=gen))
        for _ in range(3)
    ]
    states[1]["m.bias"] = torch.full((3,), 3.0)
    averaged, errors = average_lora(states)
    mean_update = sum(s["m.lora_B.weight"] @ s["m.lora_A.weight"] for s in states) / 3
    sigma = torch.linalg.svdvals(mean_update.double())
    expected_error = float(sigma[2:].norm() / sigma.norm())
    product = averaged["m.lora_B.weight"] @ averaged["m.lora_A.weight"]
    assert averaged["m.lora_A.weight"].shape == (2, 9) and averaged["m.lora_B.weight"].shape == (
        12,
        2,
    )
    assert errors == [pytest.approx(expected_error, rel=1e-6)] and 0 < errors[0] < 1
    assert float((mean_update - product).norm() / mean_update.norm()) == pytest.approx(
        expected_error, rel=1e-4
    )
    assert torch.equal(averaged["m.bias"], torch.full((3,), 5 / 3))


def test_lora_average_is_exact_when_the_updates_share_their_input_directions():
    a = torch.randn(2, 9)
    states = [_lora_pair(torch.randn(12, 2), a) for _ in range(2)]
    averaged, errors = average_lora(states)
    mean_update = (states[0]["m.lora_B.weight"] + states[1]["m.lora_B.weight"]) @ a / 2
    product = averaged["m.lora_B.weight"] @ averaged["m.lora_A.weight"]
    assert errors[0] < 1e-6 and torch.allclose(product, mean_update, atol=1e-5)


def test_averaging_a_judge_with_itself_scores_like_the_judge(kept_run, tmp_path):
    root, _ = kept_run
    source = root / "judge-run" / "evaluations" / "step-000008"
    twin = tmp_path / "twin"
    shutil.copytree(source, twin)
    report = average_checkpoints([source, twin], tmp_path / "avg")
    assert report.lora_modules > 0 and report.max_truncation_error < 1e-5
    before = OrcaJudge.from_pretrained(source).score(DEV, progress=False)
    after = OrcaJudge.from_pretrained(tmp_path / "avg").score(DEV, progress=False)
    assert [p.expected_unit for p in after] == pytest.approx(
        [p.expected_unit for p in before], abs=1e-5
    )
    metrics = json.loads((tmp_path / "avg" / "metrics.json").read_text())
    assert [m["step"] for m in metrics["averaged_from"]] == [8, 8]


def test_orca_average_cli_averages_heads_and_reports_the_truncation(kept_run, tmp_path, capsys):
    root, _ = kept_run
    steps = [root / "judge-run" / "evaluations" / f"step-{s:06d}" for s in (4, 6, 8)]
    out = tmp_path / "avg"
    assert cli_average.main([*map(str, steps), "--output", str(out), "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["lora_modules"] > 0 and 0 <= report["max_truncation_error"] < 1
    heads = [_head(s)["weight"] for s in steps]
    assert torch.allclose(_head(out)["weight"], sum(heads) / 3, atol=1e-6)
    config = json.loads((out / "orca_judge.json").read_text())["config"]
    assert config["clamp_threshold"] is None
    # the output exists now: refused without --overwrite, and nothing is changed
    before = (out / "head.safetensors").read_bytes()
    assert cli_average.main([*map(str, steps[:2]), "--output", str(out)]) == 2
    assert "exists and is not empty" in capsys.readouterr().err
    assert (out / "head.safetensors").read_bytes() == before
    script = f"{sys.executable} -m orca_judge.cli.main average"
    done = subprocess.run(
        [*script.split(), str(steps[0]), "--output", str(tmp_path / "one")],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 2 and "at least 2 checkpoints" in done.stderr


def test_orca_average_refuses_judges_of_different_settings(kept_run, tmp_path, capsys):
    root, _ = kept_run
    source = root / "judge-run" / "evaluations" / "step-000008"
    other = tmp_path / "other"
    shutil.copytree(source, other)
    meta = json.loads((other / "orca_judge.json").read_text())
    meta["config"]["likelihood"] = "beta"
    (other / "orca_judge.json").write_text(json.dumps(meta))
    assert cli_average.main([str(source), str(other), "--output", str(tmp_path / "a")]) == 2
    err = capsys.readouterr().err
    assert f"{other}: settings differ" in err and "likelihood" in err
    assert not (tmp_path / "a").exists()
    assert cli_average.main([str(source), str(source), "--output", str(tmp_path / "a")]) == 2
    assert "named twice" in capsys.readouterr().err


def test_a_kill_while_pruning_never_leaves_a_half_deleted_checkpoint(tmp_path, monkeypatch):
    import orca_judge.training.run_folder as run_folder

    real_rmtree = shutil.rmtree

    def killed_midway(path, *args, **kwargs):
        if str(path).endswith(".old") and kwargs.get("ignore_errors") is not True:
            (tmp_path / "judge-run" / "evaluations" / path.name / "adapter").rename(
                tmp_path / "gone"
            )  # part of the folder is deleted, then the process dies
            raise KeyboardInterrupt
        return real_rmtree(path, *args, **kwargs)

    cfg, training = tiny_config(), tiny_training(max_steps=4, eval_every=2)
    monkeypatch.setattr(run_folder.shutil, "rmtree", killed_midway)
    with pytest.raises(KeyboardInterrupt):
        train(
            cfg,
            TRAIN,
            DEV,
            tmp_path / "judge",
            training=training,
            progress=False,
            keep_evaluations=1,
        )
    # the half-deleted step-0 checkpoint is hidden, never listed as a checkpoint
    assert _steps(tmp_path / "judge-run") == [".step-000000.old", "step-000002"]
    monkeypatch.setattr(run_folder.shutil, "rmtree", real_rmtree)
    train(
        cfg, TRAIN, DEV, tmp_path / "judge", training=training, progress=False, keep_evaluations=1
    )
    assert _steps(tmp_path / "judge-run") == ["step-000004"]
