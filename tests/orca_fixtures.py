"""Tiny offline backbones and rated items for the ORCA judge tests (built once per test run)."""

from __future__ import annotations

import json
import os
import random
from pathlib import Path
from typing import Any

from shared_cache import shared_artefact

os.environ.setdefault("HF_HUB_OFFLINE", "1")

# A generate_until task as a third party writes one: two filters, exact_match and a judge.
THIRD_PARTY_YAML = """\
task: {name}
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 32
filter_list:
  - name: whole
    filter:
      - function: take_first
  - name: first_letter
    filter:
      - function: regex
        regex_pattern: "(\\\\w)"
      - function: take_first
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
  - metric: {metric}
    checkpoint: {checkpoint}
metadata:
  version: 1.0
"""


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


def tiny_tokenizer_dir() -> Path:
    """A byte-level BPE tokenizer trained on a few sentences, saved as a HF tokenizer."""
    return shared_artefact("orca-tok", _save_tiny_tokenizer)


def _save_tiny_tokenizer(out: Path) -> None:
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
    fast.save_pretrained(out)


def tiny_llama_dir() -> Path:
    """A 2-layer Llama causal LM (random weights) with the tiny tokenizer, saved to disk."""
    return shared_artefact("orca-llama", _save_tiny_llama)


def _save_tiny_llama(out: Path) -> None:
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
    model.save_pretrained(out)
    tok.save_pretrained(out)


def tiny_bert_dir() -> Path:
    """A 2-layer BERT encoder (random weights) with the tiny tokenizer."""
    return shared_artefact("orca-bert", _save_tiny_bert)


def _save_tiny_bert(out: Path) -> None:
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
    BertModel(config).save_pretrained(out)
    tok.save_pretrained(out)


# The projections the reference trainer adapts (on every module with these names, so on
# Gemma-3's SigLIP vision tower too).
REFERENCE_LORA_TARGETS = [
    "q_proj",
    "k_proj",
    "v_proj",
    "o_proj",
    "gate_proj",
    "up_proj",
    "down_proj",
]


def tiny_gemma3_dir(multimodal: bool) -> Path:
    """A 2-layer Gemma-3 (random weights; a tiny SigLIP tower when multimodal), saved to disk.

    One sliding-window layer (window 8) and one full layer; 1024 positions, more than the
    judge's old fixed limit of 512 tokens.
    """
    kind = "mm" if multimodal else "text"
    return shared_artefact(f"orca-gemma3-{kind}", lambda out: _save_tiny_gemma3(out, multimodal))


def _save_tiny_gemma3(
    out: Path, multimodal: bool, adds_bos: bool = False, **overrides: Any
) -> None:
    import torch
    from transformers import (
        AutoTokenizer,
        Gemma3Config,
        Gemma3ForCausalLM,
        Gemma3ForConditionalGeneration,
        Gemma3TextConfig,
        SiglipVisionConfig,
    )

    tok = AutoTokenizer.from_pretrained(tiny_tokenizer_dir())
    if adds_bos:  # as Gemma's own tokenizer does by default
        from tokenizers import processors

        tok.backend_tokenizer.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", tok.bos_token_id)]
        )
    shape = {
        "hidden_size": 64,
        "intermediate_size": 128,
        "num_hidden_layers": 2,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "head_dim": 16,
        "sliding_window": 8,
        "layer_types": ["sliding_attention", "full_attention"],
        "max_position_embeddings": 1024,
    }
    text = Gemma3TextConfig(
        vocab_size=len(tok),
        pad_token_id=tok.pad_token_id,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        **{**shape, **overrides},
    )
    torch.manual_seed(0)
    if multimodal:
        vision = SiglipVisionConfig(
            hidden_size=32,
            intermediate_size=64,
            num_hidden_layers=1,
            num_attention_heads=2,
            image_size=28,
            patch_size=14,
        )
        config = Gemma3Config(
            text_config=text.to_dict(), vision_config=vision.to_dict(), mm_tokens_per_image=4
        )
        model = Gemma3ForConditionalGeneration(config)
    else:
        model = Gemma3ForCausalLM(text)
    model.save_pretrained(out)
    tok.save_pretrained(out)


def tiny_gemma3_judge_backbone_dir() -> Path:
    """Gemma-3-270M's shape in miniature (random weights): a text-only Gemma3ForCausalLM with
    head_dim 32 ≠ hidden/heads (64/4), one KV head, tied embeddings, a sliding-window layer
    before a full one, and a tokenizer that adds BOS by default, as Gemma's does."""
    return shared_artefact(
        "orca-gemma3-judge",
        lambda out: _save_tiny_gemma3(
            out, False, adds_bos=True, head_dim=32, num_key_value_heads=1, intermediate_size=96,
            max_position_embeddings=512, tie_word_embeddings=True,
        ),
    )  # fmt: skip


def write_reference_checkpoint(
    root: Path,
    base_dir: Path,
    *,
    score_type: str = "multinomial",
    head_rows: int = 5,
    lora_r: int = 4,
    targets: list[str] | None = None,
    use_cls_token: bool = False,
    args: dict | None = None,
    base_model_name: str | None = None,
):
    """A judge laid out as the reference implementation saves it; returns (peft_lm, head).

    tokenizer/, model/config.yaml, model/lm/ (PEFT adapter of the causal LM),
    model/model_minus_lm.pt (linear.weight, linear.bias, cls_token) and, given `args`, the
    trainer's args.yaml. Vision-tower adapter keys are spelled as under transformers 4.57.1,
    the reference's pinned version (`vision_tower.vision_model.`).
    """
    import torch
    import yaml
    from peft import LoraConfig, get_peft_model
    from safetensors.torch import load_file, save_file
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(1)
    lm = AutoModelForCausalLM.from_pretrained(base_dir)
    lora = LoraConfig(
        r=lora_r,
        lora_alpha=lora_r,
        target_modules=targets or REFERENCE_LORA_TARGETS,
        task_type="CAUSAL_LM",
        init_lora_weights=False,
    )
    peft_lm = get_peft_model(lm, lora)
    lm_dir = root / "model" / "lm"
    peft_lm.save_pretrained(lm_dir)
    weights = lm_dir / "adapter_model.safetensors"
    saved = load_file(weights)
    legacy = {
        k.replace(".vision_tower.", ".vision_tower.vision_model."): v for k, v in saved.items()
    }
    save_file(legacy, weights)
    if base_model_name:
        adapter_config = json.loads((lm_dir / "adapter_config.json").read_text())
        adapter_config["base_model_name_or_path"] = base_model_name
        (lm_dir / "adapter_config.json").write_text(json.dumps(adapter_config))
    hidden = lm.config.get_text_config().hidden_size
    head = {
        "linear.weight": torch.randn(head_rows, hidden) * 0.5,
        "linear.bias": torch.randn(head_rows),
    }
    if use_cls_token:
        head["cls_token"] = torch.randn(hidden)
    torch.save(head, root / "model" / "model_minus_lm.pt")
    settings = {"init_type": "xavier_normal", "score_type": score_type}
    settings["use_cls_token"] = use_cls_token
    (root / "model" / "config.yaml").write_text(yaml.safe_dump(settings))
    if args is not None:
        (root / "args.yaml").write_text(yaml.safe_dump(args))
    AutoTokenizer.from_pretrained(base_dir).save_pretrained(root / "tokenizer")
    return peft_lm, head


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
    """A small OrcaConfig on the tiny Llama."""
    from orca_judge.config import OrcaConfig

    return OrcaConfig(**{"backbone": str(tiny_llama_dir()), "lora_r": 4, **overrides})


def tiny_training(**overrides):
    """TrainingArguments of a fast run on the tiny Llama."""
    from orca_judge.training.arguments import TrainingArguments

    knobs = {
        "lr": 1e-3,
        "batch_size": 8,
        "grad_accum": 1,
        "max_steps": 10,
        "eval_every": 5,
        "warmup_steps": 2,
        "patience": 0,
    }
    return TrainingArguments(**{**knobs, **overrides})


def tiny_trained_checkpoint() -> Path:
    """A multinomial judge trained for a few steps on the synthetic task."""
    return shared_artefact("orca-ckpt", _train_tiny_judge) / "judge"


def _train_tiny_judge(out: Path) -> None:
    from orca_judge.data import load_items
    from orca_judge.training.loop import train

    train(
        tiny_config(),
        load_items(synthetic_items(64, 1, "tr")),
        load_items(synthetic_items(24, 2, "dv")),
        out / "judge",
        training=tiny_training(),
        progress=False,
    )


def write_tiny_gguf(path: Path, seed: int = 0) -> Path:
    """A 1-layer Llama with a byte-level BPE vocabulary as a real (F32) GGUF file, written
    with the `gguf` package: what `orca backbone --gguf` reads, in kilobytes."""
    import gguf
    import numpy as np
    from tokenizers.pre_tokenizers import ByteLevel

    rng = np.random.default_rng(seed)
    tokens = ["<|endoftext|>", *sorted(ByteLevel.alphabet()), "Ġt", "he"]
    vocab, hidden, ff, heads = len(tokens), 16, 32, 2
    writer = gguf.GGUFWriter(str(path), "llama")
    writer.add_context_length(64)
    writer.add_embedding_length(hidden)
    writer.add_block_count(1)
    writer.add_feed_forward_length(ff)
    writer.add_head_count(heads)
    writer.add_head_count_kv(heads)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_rope_dimension_count(hidden // heads)
    writer.add_tokenizer_model("gpt2")
    writer.add_token_list(tokens)
    writer.add_token_types([gguf.TokenType.CONTROL] + [gguf.TokenType.NORMAL] * (vocab - 1))
    writer.add_token_merges(["Ġ t", "h e"])
    writer.add_bos_token_id(0)
    writer.add_eos_token_id(0)
    shapes = {
        "token_embd.weight": (vocab, hidden),
        "output_norm.weight": (hidden,),
        "output.weight": (vocab, hidden),
        "blk.0.attn_norm.weight": (hidden,),
        "blk.0.ffn_norm.weight": (hidden,),
        **{f"blk.0.attn_{n}.weight": (hidden, hidden) for n in ("q", "k", "v", "output")},
        "blk.0.ffn_gate.weight": (ff, hidden),
        "blk.0.ffn_up.weight": (ff, hidden),
        "blk.0.ffn_down.weight": (hidden, ff),
    }
    for name, shape in shapes.items():
        writer.add_tensor(name, (rng.standard_normal(shape) * 0.1).astype(np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
