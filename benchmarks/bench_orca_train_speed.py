"""Seconds per ORCA training step and peak memory, per backbone and precision setting.

Every (backbone, setting) pair trains the same judge with the real training loop
(`orca_judge.training.loop.train`) on the same items, seed, batches and LoRA rank — the human
stage of a recipe file — each in a fresh process, one after the other, for `--steps` optimiser
steps with a dev evaluation every `--eval-every` steps. Settings: fp32 with gradient
checkpointing, or bf16 autocast without it. Reported per pair: seconds per optimiser step
(median of the steps without an evaluation, the first step left out as warm-up), seconds per
dev evaluation, the two combined as a run of the recipe spends them (`eval_every` of the
recipe), and the process's peak resident memory; then every pair's times as speed-ups over
the first pair's, measured in the same invocation.

    # fp32 vs bf16 on one backbone
    python benchmarks/bench_orca_train_speed.py --backbone models/smollm2-135m \
        --data-dir data/orca-human [--config configs/orca/curriculum-synthetic.yaml] \
        [--steps 6 --eval-every 3] [--threads 2] [--json]
    # two backbones under the recipe's setting (bf16)
    python benchmarks/bench_orca_train_speed.py --backbone models/smollm2-135m \
        models/gemma-3-270m --settings bf16 --data-dir data/orca-human

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
        args.config, data_dir=args.data_dir, overrides={"backbone": str(args.backbone[0])}
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
        "backbone": str(args.backbone[0]),
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


TIMES = ("s_per_step", "s_per_dev_evaluation", "s_per_step_with_evaluations")


def run_child(backbone: Path, setting: str, argv: list[str], threads: int) -> dict:
    """One pair in a fresh process: its row, with the process's peak resident memory."""
    rest, skip = [], False
    for arg in argv:  # every flag but --backbone and --settings (and their values)
        if arg in ("--backbone", "--settings"):
            skip = True
        elif arg.startswith("--"):
            skip = False
        if not skip:
            rest.append(arg)
    command = [sys.executable, __file__, "--one", setting, "--backbone", str(backbone), *rest]
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "OMP_NUM_THREADS": str(threads)}
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        child = subprocess.Popen(command, stdout=out, stderr=err, text=True, env=env)
        _, status, usage = os.wait4(child.pid, 0)
        out.seek(0), err.seek(0)
        if status != 0:
            sys.stderr.write(err.read()[-4000:])
            raise SystemExit(f"{backbone} {setting} failed (wait status {status})")
        row = json.loads(out.read().strip().splitlines()[-1])
    return {**row, "peak_rss_mb": round(usage.ru_maxrss / 1024)}  # Linux: kilobytes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--backbone", type=Path, nargs="+", required=True)
    parser.add_argument("--settings", nargs="+", choices=sorted(SETTINGS), default=list(SETTINGS))
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
    if args.eval_every < 2:
        parser.error("--eval-every: expected 2 or more (steps timed between evaluations)")
    if args.steps < args.eval_every + 2:
        parser.error(
            "--steps: expected at least --eval-every + 2 (steps timed between evaluations)"
        )
    inputs = [(b, "--backbone") for b in args.backbone]
    for path, flag in [*inputs, (args.data_dir / "train.jsonl", "--data-dir")]:
        if not path.exists():
            parser.error(f"{flag}: {path} does not exist")
    if args.one:
        print(json.dumps(one_setting(args)))
        return 0

    given = list(argv if argv is not None else sys.argv[1:])
    pairs = [(b, s) for b in args.backbone for s in args.settings]
    if len(pairs) < 2:
        parser.error("expected two pairs or more to compare (two backbones or two --settings)")
    rows = [run_child(backbone, setting, given, args.threads) for backbone, setting in pairs]
    base = rows[0]
    label = f"{base['backbone']} {base['setting']}"
    ratios = {
        f"{row['backbone']} {row['setting']}": {
            key: round(base[key] / row[key], 2) for key in TIMES if row[key] > 0
        }
        for row in rows[1:]
    }
    result = {"rows": rows, "baseline": label, "speedup_over_baseline": ratios}
    if args.json:
        print(json.dumps(result, indent=2))
        return 0
    for row in rows:
        print(
            f"{row['backbone']} {row['setting']}: {row['s_per_step']:.2f} s/step, "
            f"{row['s_per_dev_evaluation']:.1f} s per dev evaluation ({row['dev_items']} items), "
            f"{row['s_per_step_with_evaluations']:.2f} s/step with an evaluation every "
            f"{row['recipe_eval_every']} steps ({row['threads']} threads), "
            f"peak RSS {row['peak_rss_mb']} MB"
        )
    for name, ratio in ratios.items():
        print(
            f"speed-up of {name} over {label}: " + ", ".join(f"{k} x{v}" for k, v in ratio.items())
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
