"""Training and scoring on several processes (torchrun, 2 gloo ranks on CPU) end as one does."""

import functools
import json
import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from orca_fixtures import synthetic_items, tiny_llama_dir, write_jsonl
from safetensors.torch import load_file

from orca_judge.cli import score as cli_score
from orca_judge.cli import train as cli_train
from orca_judge.processes import Processes
from orca_judge.training import curriculum
from orca_judge.training.loop import train

# 61 items in batches of 4: every epoch (16 batches, 8 steps of grad_accum 2) has one batch of
# a single item, of which one rank's share is empty.
TRAIN_FLAGS = [
    "--lora-r",
    "4",
    "--lr",
    "1e-3",
    "--batch-size",
    "4",
    "--grad-accum",
    "2",
    "--max-steps",
    "8",
    "--eval-every",
    "4",
    "--warmup-steps",
    "2",
    "--patience",
    "0",
    "--eval-batch-size",
    "5",
    "--no-progress",
    "--json",
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _two_ranks(command: str, args: list[str], cwd: Path) -> subprocess.CompletedProcess:
    """`torchrun --nproc_per_node 2 -m orca_judge.cli.main command args` on CPU (gloo), as a
    user would start it."""
    command = [
        sys.executable,
        "-m",
        "torch.distributed.run",
        "--nproc_per_node",
        "2",
        "--master_addr",
        "127.0.0.1",
        "--master_port",
        str(_free_port()),
        "-m",
        "orca_judge.cli.main",
        command,
        *args,
    ]
    env = {**os.environ, "OMP_NUM_THREADS": "1", "HF_HUB_OFFLINE": "1", "CUDA_VISIBLE_DEVICES": ""}
    return subprocess.run(
        command, cwd=cwd, env=env, capture_output=True, text=True, timeout=300, check=False
    )


def _weights(checkpoint: Path) -> dict[str, torch.Tensor]:
    head = load_file(checkpoint / "head.safetensors")
    adapter = load_file(checkpoint / "adapter" / "adapter_model.safetensors")
    return {**{f"head.{k}": v for k, v in head.items()}, **adapter}


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    """One single-process run and one 2-process run of the same command, in separate folders."""
    root = tmp_path_factory.mktemp("processes")
    write_jsonl(root / "train.jsonl", synthetic_items(61, 1, "tr"))
    write_jsonl(root / "dev.jsonl", synthetic_items(23, 2, "dv"))
    data = ["--train", "train.jsonl", "--dev", "dev.jsonl", "--backbone", str(tiny_llama_dir())]
    cwd = Path.cwd()
    os.chdir(root)
    try:
        one_code = cli_train.main([*data, "--output", "one/judge", *TRAIN_FLAGS])
    finally:
        os.chdir(cwd)
    assert one_code == 0
    (root / "two").mkdir()
    two = _two_ranks("train", [*data, "--output", "two/judge", *TRAIN_FLAGS], cwd=root)
    assert two.returncode == 0, two.stderr[-3000:]
    one_summary = json.loads((root / "one" / "judge" / "metrics.json").read_text())
    return root, one_summary, json.loads(two.stdout)


@pytest.mark.slow
def test_two_processes_train_the_judge_one_process_trains_with_the_same_global_batch(runs):
    root, one, two = runs
    (stage,) = two["stages"]
    for name in ("rho", "tau", "mae_mu", "mae_var"):
        assert stage["dev"][name] == pytest.approx(one["dev"][name], rel=1e-5, abs=1e-6)
    assert (stage["best_step"], stage["steps"]) == (one["best_step"], one["steps"])
    assert stage["steps"] == 8
    assert stage["clamp_threshold"] == one["clamp_threshold"]
    first, second = _weights(root / "one" / "judge"), _weights(root / "two" / "judge")
    assert sorted(first) == sorted(second) and len(first) > 2
    for name, value in first.items():
        torch.testing.assert_close(second[name], value, rtol=1e-4, atol=1e-6, msg=name)
    # So are the weights after the whole epoch (with its one-item batch), which the resume
    # state keeps.
    states = [
        torch.load(root / run / "judge-run" / "state.pt", weights_only=True)["trainable"]
        for run in ("one", "two")
    ]
    assert sorted(states[0]) == sorted(states[1])
    for name, value in states[0].items():
        torch.testing.assert_close(states[1][name], value, rtol=1e-4, atol=1e-6, msg=name)
    # The loss of every step (the mean over the whole global batch) is the same too.
    logs = [
        [json.loads(line) for line in (root / run / "judge-run" / "log.jsonl").open()]
        for run in ("one", "two")
    ]
    losses = [{r["step"]: r["loss"] for r in log if "loss" in r} for log in logs]
    assert sorted(losses[1]) == list(range(1, 9))
    assert list(losses[1].values()) == pytest.approx(list(losses[0].values()), rel=1e-5)


@pytest.mark.slow
def test_the_two_process_checkpoint_records_its_processes_and_is_written_once(runs):
    root, _, _ = runs
    recorded = json.loads((root / "two" / "judge" / "training_args.json").read_text())
    assert (recorded["world_size"], recorded["per_process_batch"]) == (2, 2)
    assert recorded["batch_size"] == 4 and recorded["grad_accum"] == 2
    single = json.loads((root / "one" / "judge" / "training_args.json").read_text())
    assert (single["world_size"], single["per_process_batch"]) == (1, 4)
    # Rank 0 alone wrote: one checkpoint and one run folder, one start event, each step once.
    assert sorted(p.name for p in (root / "two").iterdir()) == ["judge", "judge-run"]
    assert sorted(p.name for p in (root / "two" / "judge-run").iterdir()) == [
        "log.jsonl",
        "state.pt",
    ]
    log = [json.loads(line) for line in (root / "two" / "judge-run" / "log.jsonl").open()]
    assert [r["event"] for r in log if "event" in r] == ["start", "done"]
    assert log[0]["processes"] == {"world_size": 2, "per_process_batch": 2}
    steps = [r["step"] for r in log if "event" not in r]
    assert steps == sorted(set(steps)) == list(range(9))


@pytest.mark.slow
def test_two_processes_score_items_exactly_as_one_process_does(runs, capsys):
    root, _, _ = runs
    args = ["--checkpoint", "one/judge", "--input", "dev.jsonl", "--batch-size", "3", "--json"]
    cwd = Path.cwd()
    os.chdir(root)
    try:
        assert cli_score.main([*args, "--no-progress"]) == 0
    finally:
        os.chdir(cwd)
    one = json.loads(capsys.readouterr().out)
    two = _two_ranks("score", [*args, "--no-progress"], cwd=root)
    assert two.returncode == 0, two.stderr[-3000:]
    assert json.loads(two.stdout) == one  # rank 0 printed once, with every item
    assert len(one["predictions"]) == 23


class Interrupt(Exception):
    pass


@pytest.mark.slow
def test_a_run_cut_short_on_one_process_resumes_on_two_and_ends_as_one_process_does(
    runs, monkeypatch
):
    root, one, _ = runs
    data = ["--train", "train.jsonl", "--dev", "dev.jsonl", "--backbone", str(tiny_llama_dir())]

    def stop_at_six(step, record):
        if step == 6:
            raise Interrupt

    monkeypatch.setattr(curriculum, "train", functools.partial(train, on_step=stop_at_six))
    monkeypatch.chdir(root)
    with pytest.raises(Interrupt):
        cli_train.main([*data, "--output", "cut/judge", *TRAIN_FLAGS])
    resumed = _two_ranks("train", [*data, "--output", "cut/judge", *TRAIN_FLAGS], cwd=root)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert json.loads(resumed.stdout)["stages"][0]["dev"] == pytest.approx(one["dev"], rel=1e-5)
    log = [json.loads(line) for line in (root / "cut" / "judge-run" / "log.jsonl").open()]
    assert [r["event"] for r in log if "event" in r] == ["start", "resume", "done"]
    assert [r["step"] for r in log if "event" not in r] == list(range(9))
    states = [
        torch.load(root / run / "judge-run" / "state.pt", weights_only=True)["trainable"]
        for run in ("one", "cut")
    ]
    for name, value in states[0].items():
        torch.testing.assert_close(states[1][name], value, rtol=1e-4, atol=1e-6, msg=name)
    recorded = json.loads((root / "cut" / "judge" / "training_args.json").read_text())
    # The best checkpoint was written by the process that reached it.
    by_two = one["best_step"] > 6
    assert (recorded["world_size"], recorded["per_process_batch"]) == ((2, 2) if by_two else (1, 4))


def test_a_launcher_environment_gives_rank_world_size_and_local_rank():
    env = {"RANK": "3", "WORLD_SIZE": "4", "LOCAL_RANK": "1"}
    assert Processes.from_environment(env) == Processes(rank=3, world_size=4, local_rank=1)
    assert Processes.from_environment({}) == Processes(0, 1, 0)
    with pytest.raises(ValueError, match=r"RANK=4 WORLD_SIZE=4: expected 0 <= RANK < WORLD_SIZE"):
        Processes.from_environment({"RANK": "4", "WORLD_SIZE": "4"})
    with pytest.raises(ValueError, match=r"WORLD_SIZE='two': expected a whole number"):
        Processes.from_environment({"WORLD_SIZE": "two"})


def test_each_rank_takes_every_world_size_th_item_of_a_batch():
    batch = [10, 11, 12, 13, 14]
    shares = [Processes(rank, 2).share(batch) for rank in range(2)]
    assert shares == [[10, 12, 14], [11, 13]]
    assert Processes(1, 2).share([7]) == []
    assert Processes(0, 4).record(8) == {"world_size": 4, "per_process_batch": 2}


@pytest.mark.parametrize("batch_size", [3, 1])
def test_a_batch_that_does_not_split_over_the_processes_is_refused_in_one_line(batch_size):
    with pytest.raises(ValueError) as refused:
        Processes(0, 2).per_process(batch_size)
    assert str(refused.value) == (
        f"--batch-size {batch_size} cannot be split over 2 processes: give a multiple of 2 (each "
        "process takes batch size / processes items of every batch)"
    )
