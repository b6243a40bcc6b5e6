"""Seconds per ORCA training step: fp32 with gradient checkpointing (today) vs bf16 autocast.

Both settings train the same judge with the real training loop (`orca_judge.training.loop.train`)
on the same items, seed, batches and LoRA rank — the human stage of a recipe file — each in a
fresh process, one after the other, for `--steps` optimiser steps with a dev evaluation every
`--eval-every` steps. Reported per setting: seconds per optimiser step (median of the steps
without an evaluation, the first step left out as warm-up), seconds per dev evaluation, and
the two combined as a run of the recipe spends them (`eval_every` of the recipe); then the
new setting's figures as ratios of today's, measured in the same invocation.

    python benchmarks/bench_orca_train_speed.py --backbone models/smollm2-135m \
        --data-dir data/orca-human [--config configs/orca/curriculum-synthetic.yaml] \
        [--steps 6 --eval-every 3] [--threads 2] [--json]

What the faster setting reaches over the whole recipe (dev ρ at its best step) is the seed
table's to say: `benchmarks/orca_seed_table.py` trains the recipe file, whose settings name
the precision (`autocast`, `gradient_checkpointing`).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]

SETTINGS = {
    "fp32": {"autocast": "off", "gradient_checkpointing": True},
    "bf16": {"autocast": "bfloat16", "gradient_checkpointing": False},
}


def _recipe(args: argparse.Namespace) -> tuple[dict, dict]:
    """(judge config, training arguments) of the recipe's last stage, as orca train reads them."""
    from orca_judge.training.arguments import split_settings
    from orca_judge.training.plan import plan_stages

    plans = plan_stages(
        args.config, data_dir=args.data_dir, overrides={"backbone": str(args.backbone)}
    )
    config, training = split_settings(plans[-1].settings)
    return config.to_dict(), training.to_dict()


def one_setting(args: argparse.Namespace) -> dict:
    """Train `args.steps` steps under setting `args.one` in this process; what they took."""
    import torch

    from orca_judge.config import OrcaConfig
    from orca_judge.data import load_items
    from orca_judge.training.arguments import TrainingArguments
    from orca_judge.training.loop import train

    torch.set_num_threads(args.threads)
    config, training = _recipe(args)
    recipe_eval_every = training["eval_every"]
    training.update(
        SETTINGS[args.one], max_steps=args.steps, eval_every=args.eval_every, patience=0
    )
    train_items = load_items(args.data_dir / "train.jsonl")
    dev_items = load_items(args.data_dir / "dev.jsonl")
    marks: list[tuple[int, float, bool]] = []

    def on_step(step: int, record: dict) -> None:
        marks.append((step, time.perf_counter(), "dev" in record))

    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        train(
            OrcaConfig(**config),
            train_items,
            dev_items,
            Path(tmp) / "judge",
            training=TrainingArguments(**training),
            device="cpu",
            progress=False,
            on_step=on_step,
        )
    times = [started] + [t for _, t, _ in marks]
    plain = [times[i + 1] - times[i] for i, (_, _, dev) in enumerate(marks) if not dev][1:]
    with_dev = [times[i + 1] - times[i] for i, (_, _, dev) in enumerate(marks) if dev]
    step_s = statistics.median(plain)
    eval_s = max(0.0, statistics.median(with_dev) - step_s)
    return {
        "setting": args.one,
        **SETTINGS[args.one],
        "threads": args.threads,
        "steps_timed": len(plain),
        "s_per_step": round(step_s, 3),
        "s_per_dev_evaluation": round(eval_s, 3),
        "dev_items": len(dev_items),
        "s_per_step_with_evaluations": round(step_s + eval_s / recipe_eval_every, 3),
        "recipe_eval_every": recipe_eval_every,
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backbone", type=Path, required=True)
    parser.add_argument("--data-dir", type=Path, required=True)
    parser.add_argument(
        "--config", type=Path, default=REPO / "configs/orca/curriculum-synthetic.yaml"
    )
    parser.add_argument("--steps", type=int, default=6)
    parser.add_argument("--eval-every", type=int, default=3)
    parser.add_argument("--threads", type=int, default=min(2, os.cpu_count() or 1))
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--one", choices=sorted(SETTINGS), help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    for flag in ("steps", "eval_every", "threads"):
        if getattr(args, flag) < 1:
            parser.error(f"--{flag.replace('_', '-')}: expected a whole number of 1 or more")
    if args.steps < args.eval_every + 2:
        parser.error(
            "--steps: expected at least --eval-every + 2 (steps timed between evaluations)"
        )
    inputs = ((args.backbone, "--backbone"), (args.data_dir / "train.jsonl", "--data-dir"))
    for path, flag in inputs:
        if not path.exists():
            parser.error(f"{flag}: {path} does not exist")
    if args.one:
        print(json.dumps(one_setting(args)))
        return 0

    rows = []
    for setting in SETTINGS:
        command = [sys.executable, __file__, "--one", setting, *(argv or sys.argv[1:])]
        env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(args.threads)}
        done = subprocess.run(command, capture_output=True, text=True, env=env, check=False)
        if done.returncode != 0:
            sys.stderr.write(done.stderr[-4000:])
            raise SystemExit(f"setting {setting} failed (exit {done.returncode})")
        rows.append(json.loads(done.stdout.strip().splitlines()[-1]))
    base, new = rows
    ratios = {
        key: round(base[key] / new[key], 2)
        for key in ("s_per_step", "s_per_dev_evaluation", "s_per_step_with_evaluations")
        if new[key] > 0
    }
    result = {"settings": rows, "speedup_over_fp32": ratios}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for row in rows:
        print(
            f"{row['setting']:>5}: {row['s_per_step']:.2f} s/step, "
            f"{row['s_per_dev_evaluation']:.1f} s per dev evaluation ({row['dev_items']} items), "
            f"{row['s_per_step_with_evaluations']:.2f} s/step with an evaluation every "
            f"{row['recipe_eval_every']} steps ({row['threads']} threads)"
        )
    print("speed-up of bf16 over fp32: " + ", ".join(f"{k} x{v}" for k, v in ratios.items()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
