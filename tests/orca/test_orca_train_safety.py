"""The trainer never destroys or misleads: outputs, run state, resume checks, broken files."""

import json
import math
import shutil
import subprocess
import sys

import pytest
import torch
from orca_fixtures import (
    synthetic_items,
    tiny_config,
    tiny_llama_dir,
    tiny_trained_checkpoint,
    tiny_training,
    write_jsonl,
)

from orca_judge.cli import score as cli_score
from orca_judge.cli import train as cli_train
from orca_judge.data import load_items
from orca_judge.errors import RunConflictError
from orca_judge.training.loop import train

TRAIN = load_items(synthetic_items(64, 1, "tr"))
DEV = load_items(synthetic_items(24, 2, "dv"))
TINY = ["--lora-r", "4", "--batch-size", "8", "--grad-accum", "1", "--warmup-steps", "1"]
TINY += ["--eval-every", "2", "--max-steps", "2", "--lr", "1e-3", "--no-progress"]


@pytest.fixture
def data(tmp_path):
    train = write_jsonl(tmp_path / "train.jsonl", synthetic_items(32, 1, "tr"))
    dev = write_jsonl(tmp_path / "dev.jsonl", synthetic_items(30, 2, "dv"))
    return train, dev


def _argv(train, dev, output, *extra):
    base = ["--train", str(train), "--dev", str(dev), "--backbone", str(tiny_llama_dir())]
    return [*base, "--output", str(output), *TINY, *extra]


def _one_line_error(capsys) -> str:
    # The caller checked the exit status 2: main caught the error (no traceback escaped).
    # transformers' loading bars may come first on stderr; the reason is the last line.
    line = capsys.readouterr().err.strip().splitlines()[-1]
    assert line.startswith(("orca train: error: ", "orca score: error: "))
    return line


def test_an_existing_user_folder_is_refused_as_output_and_left_untouched(tmp_path, data, capsys):
    precious = tmp_path / "thesis"
    precious.mkdir()
    (precious / "chapter1.tex").write_text("years of work")
    (precious / ".chapter2.tex.tmp").write_text("an editor's backup")
    assert cli_train.main(_argv(*data, precious)) == 2
    assert "thesis: exists, is not empty and is not this run's resumable state" in (
        _one_line_error(capsys)
    )
    assert sorted(p.name for p in precious.iterdir()) == [".chapter2.tex.tmp", "chapter1.tex"]
    assert cli_train.main(_argv(*data, precious, "--overwrite")) == 0
    # --overwrite writes the checkpoint's files into the folder; the user's files stay.
    assert (precious / "orca_judge.json").exists()
    assert (precious / "chapter1.tex").read_text() == "years of work"
    assert (precious / ".chapter2.tex.tmp").read_text() == "an editor's backup"


@pytest.mark.slow
def test_rerunning_the_same_command_resumes_but_another_run_cannot_replace_the_checkpoint(
    tmp_path, data, capsys
):
    out = tmp_path / "judge"
    assert cli_train.main(_argv(*data, out)) == 0
    head = (out / "head.safetensors").read_bytes()
    assert cli_train.main(_argv(*data, out)) == 0  # finished run: resumes, nothing replaced
    assert (out / "head.safetensors").read_bytes() == head
    capsys.readouterr()
    # A finished checkpoint whose run state is gone is someone's result, not a resume point.
    shutil.rmtree(tmp_path / "judge-run")
    assert cli_train.main(_argv(*data, out)) == 2
    assert "judge: exists, is not empty" in _one_line_error(capsys)
    assert (out / "head.safetensors").read_bytes() == head


def test_run_dir_flag_holds_the_log_and_resume_state(tmp_path, data):
    out, run = tmp_path / "judge", tmp_path / "state" / "r1"
    assert cli_train.main(_argv(*data, out, "--run-dir", str(run))) == 0
    assert (run / "state.pt").exists() and (run / "log.jsonl").exists()
    assert not (tmp_path / "judge-run").exists()


def test_resume_with_changed_training_data_is_refused_naming_the_file_hash(tmp_path, data, capsys):
    train, dev = data
    out = tmp_path / "judge"
    argv = _argv(train, dev, out, "--heldout-fraction", "0.3")
    assert cli_train.main(argv) == 0
    write_jsonl(train, synthetic_items(32, 7, "tr"))
    capsys.readouterr()
    assert cli_train.main(argv) == 2
    err = _one_line_error(capsys)
    assert "saved for different data or split settings" in err
    assert "train_file_sha256" in err and "train_items_sha256" in err


@pytest.mark.parametrize(
    ("flag", "value", "named"),
    [("--split-seed", "5", "split_seed 0 -> 5"), ("--heldout-fraction", "0.5", "heldout_fraction")],
)
def test_resume_with_other_split_settings_is_refused_naming_them(
    tmp_path, data, capsys, flag, value, named
):
    out = tmp_path / "judge"
    assert cli_train.main(_argv(*data, out, "--heldout-fraction", "0.3")) == 0
    capsys.readouterr()
    changed = _argv(*data, out, "--heldout-fraction", "0.3", flag, value)
    assert cli_train.main(changed) == 2
    assert named in _one_line_error(capsys)


def test_an_undefined_dev_rho_is_never_kept_as_the_best(tmp_path, monkeypatch):
    import orca_judge.training.evaluation as train_module

    real = train_module.agreement

    def constant_predictions(means, human, *args, **kwargs):
        return real([0.5] * len(means), human, *args, **kwargs)  # rho of a constant is NaN

    monkeypatch.setattr(train_module, "agreement", constant_predictions)
    with pytest.raises(ValueError, match="no dev evaluation in 2 steps gave a defined Spearman"):
        train(
            tiny_config(),
            TRAIN,
            DEV,
            tmp_path / "j",
            training=tiny_training(max_steps=2, eval_every=1),
            progress=False,
        )
    assert not (tmp_path / "j").exists()


@pytest.mark.parametrize(
    ("select", "kept", "written_step"),
    [("best", [True, False, False, False], 0), ("last", [True, True, False, True], 3)],
)
def test_select_keeps_the_best_or_the_last_evaluation_never_an_undefined_one(
    select, kept, written_step
):
    from orca_judge.training.loop import TrainState

    state = TrainState()
    verdicts = []
    for step, rho in enumerate([0.5, 0.3, math.nan, 0.4]):
        state.step = step
        verdicts.append(state.count_evaluation({"rho": rho}, [], [], 0, select))
    assert verdicts == kept and state.best_step == written_step


def test_a_last_selection_writes_the_final_step(tmp_path):
    training = tiny_training(max_steps=4, eval_every=2, select="last")
    result = train(tiny_config(), TRAIN, DEV, tmp_path / "j", training=training, progress=False)
    assert (result.steps, result.best_step) == (4, 4)
    written = json.loads((tmp_path / "j" / "metrics.json").read_text())
    assert written["best_step"] == 4


def _interrupt_after(cfg, training, output, last_step):
    """Train until `last_step` has been logged, then stop as a Ctrl-C would."""

    def stop(step, record):
        if step == last_step:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        train(cfg, TRAIN, DEV, output, training=training, progress=False, on_step=stop)


@pytest.mark.slow
def test_log_holds_each_step_once_after_a_resume(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=6, eval_every=2)
    _interrupt_after(cfg, training, tmp_path / "j", 3)
    train(cfg, TRAIN, DEV, tmp_path / "j", training=training, progress=False)
    rows = [json.loads(x) for x in (tmp_path / "j-run" / "log.jsonl").read_text().splitlines()]
    assert [r["step"] for r in rows if "loss" in r] == [1, 2, 3, 4, 5, 6]
    assert [r["event"] for r in rows if "event" in r] == ["start", "resume", "done"]


@pytest.mark.slow
def test_a_resume_before_the_first_evaluation_does_not_repeat_the_untrained_one(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=4, eval_every=2, patience=1)
    _interrupt_after(cfg, training, tmp_path / "j", 1)  # the state holds only the step-0 evaluation
    resumed = train(cfg, TRAIN, DEV, tmp_path / "j", training=training, progress=False)
    whole = train(cfg, TRAIN, DEV, tmp_path / "k", training=training, progress=False)

    def evaluated_steps(output):
        log = (tmp_path / f"{output}-run" / "log.jsonl").read_text().splitlines()
        return [r["step"] for r in map(json.loads, log) if "dev" in r]

    assert evaluated_steps("j") == evaluated_steps("k")
    assert evaluated_steps("j")[:2] == [0, 2]  # step 0 once, and training went on
    assert (resumed.steps, resumed.best_step) == (whole.steps, whole.best_step)
    assert resumed.best_dev_rho == pytest.approx(whole.best_dev_rho, abs=1e-6)


def test_backbone_path_is_stored_resolved_and_backbone_flag_still_overrides(
    tmp_path, monkeypatch, capsys
):
    model_dir = tiny_llama_dir()
    monkeypatch.chdir(model_dir.parent)
    train(
        tiny_config(backbone=model_dir.name),
        TRAIN,
        DEV,
        tmp_path / "j",
        training=tiny_training(max_steps=1, eval_every=1),
        progress=False,
    )
    meta = json.loads((tmp_path / "j" / "orca_judge.json").read_text())
    assert meta["config"]["backbone"] == str(model_dir.resolve()) == meta["backbone"]["id"]
    monkeypatch.chdir(tmp_path)  # scoring from elsewhere finds the backbone
    items = write_jsonl(tmp_path / "items.jsonl", synthetic_items(3, 4, "x"))
    argv = ["--checkpoint", str(tmp_path / "j"), "--input", str(items), "--no-progress"]
    assert cli_score.main(argv) == 0
    capsys.readouterr()
    assert cli_score.main([*argv, "--backbone", str(tmp_path / "elsewhere")]) == 2
    assert "elsewhere" in _one_line_error(capsys)


@pytest.mark.slow
def test_temporary_folders_of_a_killed_write_are_cleaned_on_the_next_run(tmp_path):
    out = tmp_path / "judge"
    killed = (
        "import os, signal, sys\n"
        "from orca_judge.checkpoint import atomic_dir, atomic_write_text\n"
        "target = sys.argv[1]\n"
        "with atomic_dir(target) as tmp:\n"
        "    (tmp / 'head.safetensors').write_bytes(b'x' * 1000)\n"
        "    os.kill(os.getpid(), signal.SIGKILL)\n"
    )
    for _ in range(2):
        proc = subprocess.run([sys.executable, "-c", killed, str(out)], check=False)
        assert proc.returncode == -9
    leftovers = [p for p in tmp_path.iterdir() if p.name.startswith(".judge.")]
    assert len(leftovers) == 2 and all(p.stat().st_mode & 0o777 == 0o700 for p in leftovers)
    train(
        tiny_config(),
        TRAIN,
        DEV,
        out,
        training=tiny_training(max_steps=1, eval_every=1),
        progress=False,
    )
    assert sorted(p.name for p in tmp_path.iterdir()) == ["judge", "judge-run"]
    assert not [p for p in out.iterdir() if p.name.startswith(".")]


def test_truncated_resume_state_is_a_one_line_error(tmp_path, data, capsys):
    out = tmp_path / "judge"
    assert cli_train.main(_argv(*data, out)) == 0
    state = tmp_path / "judge-run" / "state.pt"
    state.write_bytes(state.read_bytes()[:200])
    capsys.readouterr()
    assert cli_train.main(_argv(*data, out)) == 2
    assert "state.pt: unreadable resume state" in _one_line_error(capsys)
    assert cli_train.main(_argv(*data, out, "--overwrite")) == 0


@pytest.mark.parametrize("victim", ["head.safetensors", "adapter/adapter_model.safetensors"])
def test_truncated_checkpoint_weights_are_a_one_line_error(tmp_path, capsys, victim):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    path = root / victim
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    items = write_jsonl(tmp_path / "items.jsonl", synthetic_items(3, 4, "x"))
    code = cli_score.main(["--checkpoint", str(root), "--input", str(items), "--no-progress"])
    assert code == 2 and f"{path}: unreadable" in _one_line_error(capsys)


def test_a_head_of_nans_is_refused_and_no_nan_reaches_the_output(tmp_path, capsys):
    from safetensors.torch import load_file, save_file

    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    head = load_file(root / "head.safetensors")
    save_file({k: torch.full_like(v, math.nan) for k, v in head.items()}, root / "head.safetensors")
    items = write_jsonl(tmp_path / "items.jsonl", synthetic_items(3, 4, "x"))
    argv = ["--checkpoint", str(root), "--input", str(items), "--output", str(tmp_path / "p.jsonl")]
    assert cli_score.main([*argv, "--json", "--no-progress"]) == 2
    assert "hold NaN or infinite values" in _one_line_error(capsys)
    assert not (tmp_path / "p.jsonl").exists()


def test_non_finite_judge_outputs_are_refused_naming_an_item():
    from orca_judge.judge import OrcaJudge, predictions_from_logits

    judge = OrcaJudge.from_pretrained(tiny_trained_checkpoint())
    logits, encoded = judge.logits(load_items(synthetic_items(3, 4, "x")))
    logits[1, 2] = math.inf
    with pytest.raises(ValueError, match=r"NaN or infinite outputs for 1 item.*'x-1'"):
        predictions_from_logits(judge.config, ["x-0", "x-1", "x-2"], logits, encoded)


def test_resume_state_of_another_run_with_overwrite_starts_over(tmp_path):
    train(
        tiny_config(),
        TRAIN,
        DEV,
        tmp_path / "j",
        training=tiny_training(max_steps=2, eval_every=2),
        progress=False,
    )
    other = tiny_training(max_steps=2, eval_every=2, lr=5e-3)
    with pytest.raises(ValueError, match=r"different configuration \(lr 0\.001 -> 0\.005\)"):
        train(tiny_config(), TRAIN, DEV, tmp_path / "j", training=other, progress=False)
    result = train(
        tiny_config(), TRAIN, DEV, tmp_path / "j", training=other, progress=False, overwrite=True
    )
    rows = (tmp_path / "j-run" / "log.jsonl").read_text().splitlines()
    assert result.steps == 2 and json.loads(rows[0])["config"]["lr"] == 5e-3
    assert (tmp_path / "j" / "orca_judge.json").exists()


def test_a_resume_state_written_before_data_fingerprints_still_resumes(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=4, eval_every=2)
    _interrupt_after(cfg, training, tmp_path / "j", 2)
    path = tmp_path / "j-run" / "state.pt"
    state = torch.load(path, weights_only=True)
    del state["data"]
    torch.save(state, path)
    assert train(cfg, TRAIN, DEV, tmp_path / "j", training=training, progress=False).steps == 4


def test_a_resume_state_written_before_later_settings_existed_still_resumes(tmp_path):
    # autocast and select were added later; a state without them ran as "off" and "best".
    cfg, training = tiny_config(), tiny_training(max_steps=4, eval_every=2)
    _interrupt_after(cfg, training, tmp_path / "j", 2)
    path = tmp_path / "j-run" / "state.pt"
    state = torch.load(path, weights_only=True)
    assert state["config"]["select"] == "best" and state["config"]["autocast"] == "off"
    del state["config"]["select"], state["config"]["autocast"]
    torch.save(state, path)
    assert train(cfg, TRAIN, DEV, tmp_path / "j", training=training, progress=False).steps == 4


def test_a_resume_with_another_selection_is_refused_naming_it(tmp_path):
    cfg, training = tiny_config(), tiny_training(max_steps=4, eval_every=2)
    _interrupt_after(cfg, training, tmp_path / "j", 2)
    last = tiny_training(max_steps=4, eval_every=2, select="last")
    with pytest.raises(RunConflictError, match="select 'best' -> 'last'"):
        train(cfg, TRAIN, DEV, tmp_path / "j", training=last, progress=False)
