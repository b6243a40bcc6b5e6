"""Tiny offline backbones and rated items for the ORCA judge tests (built once per session)."""

from __future__ import annotations

import atexit
import functools
import json
import os
import random
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# One scratch folder per test session for the cached models, removed when the session ends.
SCRATCH = Path(tempfile.mkdtemp(prefix="orca-fixtures-"))
atexit.register(shutil.rmtree, SCRATCH, ignore_errors=True)

QUALITY_WORDS = {1: "wrong", 2: "poor", 3: "fair", 4: "good", 5: "excellent"}
SENTENCES = [
    "What is the bird singing in the recording?",
    "The speaker says the next word is sun because the song goes that way.",
    "How many times does the word appear in this tongue twister?",
    "A man speaks and a musical instrument is played in the background.",
    "The answer is correct, the candidate names the right instrument.",
    " |context: |question: |correct answer: |candidate answer: ",
    "question: reference: rationale: transcript: candidate:",
] + [f"the answer is {w} {w} {w}" for w in QUALITY_WORDS.values()]


@functools.cache
def tiny_tokenizer_dir() -> Path:
    """A byte-level BPE tokenizer trained on a few sentences, saved as a HF tokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<pad>", "<s>", "</s>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tok.train_from_iterator(SENTENCES * 20, trainer)
    fast = PreTrainedTokenizerFast(
        tokenizer_object=tok, pad_token="<pad>", bos_token="<s>", eos_token="</s>"
    )
    out = Path(tempfile.mkdtemp(prefix="orca-tok-", dir=SCRATCH))
    fast.save_pretrained(out)
    return out


@functools.cache
def tiny_llama_dir() -> Path:
    """A 2-layer Llama causal LM (random weights) with the tiny tokenizer, saved to disk."""
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    tok = AutoTokenizer.from_pretrained(tiny_tokenizer_dir())
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=len(tok),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
    )
    model = LlamaForCausalLM(config)
    out = Path(tempfile.mkdtemp(prefix="orca-llama-", dir=SCRATCH))
    model.save_pretrained(out)
    tok.save_pretrained(out)
    return out


@functools.cache
def tiny_bert_dir() -> Path:
    """A 2-layer BERT encoder (random weights) with the tiny tokenizer."""
    import torch
    from transformers import AutoTokenizer, BertConfig, BertModel

    tok = AutoTokenizer.from_pretrained(tiny_tokenizer_dir())
    tok.cls_token, tok.sep_token = "<s>", "</s>"
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(tok),
        hidden_size=32,
        intermediate_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        max_position_embeddings=512,
        pad_token_id=tok.pad_token_id,
    )
    out = Path(tempfile.mkdtemp(prefix="orca-bert-", dir=SCRATCH))
    BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def synthetic_items(n: int, seed: int, prefix: str = "item") -> list[dict]:
    """Items whose rating is named by the candidate's last word (learnable from the last token)."""
    rng = random.Random(seed)
    items = []
    for i in range(n):
        level = rng.randint(1, 5)
        ratings = [
            min(5, max(1, level + rng.choice([-1, 0, 0, 0, 1]))) for _ in range(rng.randint(1, 4))
        ]
        items.append(
            {
                "id": f"{prefix}-{i}",
                "question": f"What is the bird singing ({prefix} {i % 7})?",
                "reference": "the sun",
                "rationale": "The song goes that way.",
                "transcript": "",
                "candidate": f"the answer is {QUALITY_WORDS[level]}",
                "ratings": ratings,
            }
        )
    return items


def write_jsonl(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def tiny_config(**overrides):
    """A fast OrcaConfig on the tiny Llama."""
    from orca_judge.config import OrcaConfig

    knobs = {
        "backbone": str(tiny_llama_dir()),
        "lora_r": 4,
        "lr": 1e-3,
        "batch_size": 8,
        "grad_accum": 1,
        "max_steps": 10,
        "eval_every": 5,
        "warmup_steps": 2,
        "patience": 0,
    }
    return OrcaConfig(**{**knobs, **overrides})


@functools.cache
def tiny_trained_checkpoint() -> Path:
    """A multinomial judge trained for a few steps on the synthetic task."""
    from orca_judge.data import load_items
    from orca_judge.train import train

    out = Path(tempfile.mkdtemp(prefix="orca-ckpt-", dir=SCRATCH)) / "judge"
    train(
        tiny_config(),
        load_items(synthetic_items(64, 1, "tr")),
        load_items(synthetic_items(24, 2, "dv")),
        out,
        progress=False,
    )
    return out
