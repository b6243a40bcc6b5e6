"""Peak memory and time of ORCA training steps with and without gradient checkpointing.

Each setting runs in a fresh process on the same batches (the longest training items first,
the worst case of an epoch), so the peak resident memory is that setting's own. Reported as
ratios against the run without checkpointing, measured in the same invocation.

    python benchmarks/bench_orca_train_memory.py --backbone models/smollm2-135m [--steps 2] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "orca-human"

_CHILD = """
import json, time, torch
from eval_common.devices import peak_memory_mb
from orca_judge import likelihoods
from orca_judge.config import OrcaConfig
from orca_judge.data import load_items
from orca_judge.judge import encode_item, pad_token_id
from orca_judge.model import collate
from orca_judge.training.arguments import TrainingArguments
from orca_judge.training.model_init import build_model, enable_gradient_checkpointing

cfg = OrcaConfig(backbone={backbone!r}, lora_r={lora_r})
training = TrainingArguments(batch_size={batch_size}, gradient_checkpointing={checkpointing})
model, tokenizer, _ = build_model(cfg, torch.device("cpu"))
if training.gradient_checkpointing:
    enable_gradient_checkpointing(model)
loaded = peak_memory_mb()["peak_rss_mb"]
items = load_items({data!r})[:{pool}]
encoded = [encode_item(tokenizer, it, cfg, model.backbone.config) for it in items]
longest = sorted(range(len(items)), key=lambda i: -len(encoded[i].input_ids))
params = [p for p in model.parameters() if p.requires_grad]
optimizer = torch.optim.AdamW(params, lr=training.lr)
model.train()
started = time.perf_counter()
for step in range({steps}):
    batch = longest[step * training.batch_size:(step + 1) * training.batch_size]
    ids, mask = collate([encoded[i].input_ids for i in batch], pad_token_id(tokenizer))
    ratings = likelihoods.pad_ratings([list(items[i].ratings) for i in batch])
    likelihoods.nll(cfg.likelihood, model(ids, mask), ratings).mean().backward()
    optimizer.step()
    optimizer.zero_grad(set_to_none=True)
print(json.dumps({{"checkpointing": training.gradient_checkpointing, "tokens": int(ids.shape[1]),
                  "s_per_step": (time.perf_counter() - started) / {steps},
                  "peak_after_load_mb": loaded, **peak_memory_mb()}}))
"""


def run_setting(args: argparse.Namespace, checkpointing: bool) -> dict:
    """One fresh process training `args.steps` steps; its JSON line."""
    code = _CHILD.format(
        backbone=args.backbone,
        lora_r=args.lora_r,
        batch_size=args.batch_size,
        checkpointing=checkpointing,
        data=str(args.data),
        pool=args.pool,
        steps=args.steps,
    )
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="models/smollm2-135m")
    parser.add_argument("--data", type=Path, default=DATA / "train.jsonl")
    parser.add_argument("--pool", type=int, default=200, help="items searched for the longest")
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--lora-r", type=int, default=16)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)
    kept, recomputed = run_setting(args, False), run_setting(args, True)
    summary = {
        "without": kept,
        "with": recomputed,
        "peak_ratio": recomputed["peak_rss_mb"] / kept["peak_rss_mb"],
        "time_ratio": recomputed["s_per_step"] / kept["s_per_step"],
    }
    if args.json:
        print(json.dumps(summary, indent=1))
        return 0
    print(
        f"batch {args.batch_size} x {kept['tokens']} tokens, LoRA r {args.lora_r}, "
        f"{args.steps} steps"
    )
    for name, row in (("without", kept), ("with", recomputed)):
        print(
            f"{name:>8} checkpointing: peak {row['peak_rss_mb']:.0f} MB "
            f"(after loading {row['peak_after_load_mb']:.0f} MB), {row['s_per_step']:.1f} s/step"
        )
    print(f"ratio with/without: peak {summary['peak_ratio']:.2f}, time {summary['time_ratio']:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
