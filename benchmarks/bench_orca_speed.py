"""Scoring and training speed of the ORCA judge against a naive version, measured in the same run,
and peak memory of scoring against item count.

Optimised: base model only (no vocabulary logits), length-sorted batches, inference_mode, LoRA
merged. Naive: causal-LM forward (vocabulary logits computed, hidden states requested), batches
in input order, LoRA unmerged, autograd bookkeeping on (no_grad only).

The memory sweep scores the `--data` items, repeated up to each size, with a judge on a
2-layer, 64-wide random Llama that reads the backbone's tokenizer: what grows with the item
count is the judge's bookkeeping, not the backbone's weights, and a small model keeps the
largest size quick.

    python benchmarks/bench_orca_speed.py --backbone models/smollm2-135m [--items 32] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

import torch

from orca_judge.config import OrcaConfig
from orca_judge.data import load_items
from orca_judge.judge import batched_logits, encode_item, pad_token_id
from orca_judge.likelihoods import nll, pad_ratings
from orca_judge.model import OrcaModel, add_lora, collate, load_backbone, pool_last
from orca_judge.training.loop import epoch_batches

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "orca-human"


def _naive_lm(backbone: str, cfg: OrcaConfig):
    from transformers import AutoModelForCausalLM

    lm = AutoModelForCausalLM.from_pretrained(backbone, dtype=torch.float32)
    lm = add_lora(lm, cfg)
    head = torch.nn.Linear(lm.config.hidden_size, 5)
    return lm, head


def _naive_logits(lm, head, ids, mask):
    out = lm(input_ids=ids, attention_mask=mask, output_hidden_states=True)
    return head(pool_last(out.hidden_states[-1], mask))


def bench_scoring(backbone: str, items, cfg: OrcaConfig, batch_size: int) -> dict[str, float]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(backbone)
    base = load_backbone(backbone, torch.float32)
    enc = [encode_item(tok, it, cfg, base.config) for it in items]
    pad = pad_token_id(tok)
    merged = add_lora(base, cfg).merge_and_unload()
    model = OrcaModel(merged, "multinomial", "last", merged.config.hidden_size).eval()
    start = time.perf_counter()
    batched_logits(model, enc, pad_id=pad, batch_size=batch_size, device=torch.device("cpu"))
    fast = time.perf_counter() - start
    lm, head = _naive_lm(backbone, cfg)
    lm.eval()
    start = time.perf_counter()
    with torch.no_grad():
        for i in range(0, len(enc), batch_size):
            ids, mask = collate([e.input_ids for e in enc[i : i + batch_size]], pad)
            _naive_logits(lm, head, ids, mask)
    naive = time.perf_counter() - start
    return {
        "items": len(enc),
        "items_per_s": len(enc) / fast,
        "naive_items_per_s": len(enc) / naive,
        "speedup": naive / fast,
    }


def bench_training(
    backbone: str, items, cfg: OrcaConfig, batch_size: int, steps: int
) -> dict[str, float]:
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(backbone)
    base = load_backbone(backbone, torch.float32)
    enc = [encode_item(tok, it, cfg, base.config) for it in items]
    pad = pad_token_id(tok)
    ratings = [list(it.ratings) for it in items]
    model = OrcaModel(add_lora(base, cfg), "multinomial", "last", base.config.hidden_size)
    model.init_head(0)
    sorted_batches = epoch_batches([len(e.input_ids) for e in enc], batch_size, 0, 0)
    plain_batches = [list(range(i, i + batch_size)) for i in range(0, len(enc), batch_size)]

    def run(forward, params, batches) -> float:
        opt = torch.optim.AdamW(params, lr=1e-4)
        times = []
        for batch in batches[: steps + 1]:
            start = time.perf_counter()
            ids, mask = collate([enc[i].input_ids for i in batch], pad)
            loss = nll(
                "multinomial", forward(ids, mask), pad_ratings([ratings[i] for i in batch])
            ).mean()
            loss.backward()
            opt.step()
            opt.zero_grad()
            times.append(time.perf_counter() - start)
        return sum(times[1:]) / steps  # the first step warms up allocators

    params = [p for p in model.parameters() if p.requires_grad]
    fast = run(model, params, sorted_batches)
    lm, head = _naive_lm(backbone, cfg)
    naive_params = [p for p in lm.parameters() if p.requires_grad] + list(head.parameters())
    naive = run(lambda i, m: _naive_logits(lm, head, i, m), naive_params, plain_batches)
    return {
        "steps": steps,
        "batch_size": batch_size,
        "s_per_step": fast,
        "naive_s_per_step": naive,
        "speedup": naive / fast,
    }


_MEMORY_CHILD = """
import itertools, json, sys
import torch
from transformers import AutoTokenizer, LlamaConfig, LlamaModel
from orca_judge import OrcaJudge
from orca_judge.config import OrcaConfig
from orca_judge.data import load_items
from orca_judge.model import OrcaModel

def rss_mb(key):
    for line in open("/proc/self/status"):
        if line.startswith(key):
            return int(line.split()[1]) / 1024

backbone, data, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
tokenizer = AutoTokenizer.from_pretrained(backbone)
torch.manual_seed(0)
tiny = LlamaModel(LlamaConfig(
    vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
    num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096,
))
cfg = OrcaConfig(backbone=backbone)
model = OrcaModel(tiny, cfg.likelihood, "last", 64)
judge = OrcaJudge(model, tokenizer, cfg, backbone_fingerprint="random tiny Llama")
items = load_items(data)
judge.score(items[:16], batch_size=16)  # warm-up
items = list(itertools.islice(itertools.cycle(items), n))
open("/proc/self/clear_refs", "w").write("5")  # reset the peak to the current RSS
before = rss_mb("VmRSS")
judge.score(items, batch_size=16)
print(json.dumps({"items": n, "rss_before_mb": before, "peak_mb": rss_mb("VmHWM")}))
"""


def bench_memory(backbone: str, data: Path, sizes: list[int]) -> list[dict[str, float]]:
    """Peak RSS while scoring n items with a tiny judge, one fresh process per n."""
    rows = []
    for n in sizes:
        out = subprocess.run(
            [sys.executable, "-c", _MEMORY_CHILD, backbone, str(data), str(n)],
            capture_output=True,
            text=True,
            check=True,
        )
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backbone", default="models/smollm2-135m")
    parser.add_argument("--data", type=Path, default=DATA / "dev.jsonl")
    parser.add_argument("--items", type=int, default=32, help="items to score")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument(
        "--train-steps", type=int, default=2, help="timed steps (after one warm-up)"
    )
    parser.add_argument("--memory-sizes", type=int, nargs="*", default=[64, 256, 1024])
    parser.add_argument("--skip-backbone", action="store_true", help="only the memory sweep")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args(argv)

    torch.manual_seed(0)
    cfg = OrcaConfig(backbone=args.backbone, lora_r=16)
    items = load_items(args.data, require_ratings=True)
    results = {"threads": torch.get_num_threads()}
    if not args.skip_backbone:
        results["scoring"] = bench_scoring(args.backbone, items[: args.items], cfg, args.batch_size)
        n_train = args.batch_size * (args.train_steps + 1)
        results["training"] = bench_training(
            args.backbone, items[:n_train], cfg, args.batch_size, args.train_steps
        )
    results["memory"] = bench_memory(args.backbone, args.data, args.memory_sizes)
    print(json.dumps(results, indent=2 if not args.json else None))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
