"""Published-layout judges: Gemma-3 backbones, the CLS token, args.yaml, clamp thresholds, limits.

Checkpoints are written in the reference implementation's layout on tiny offline models;
`reference_logits` redoes the reference's inference steps to score them independently.
"""

from __future__ import annotations

import json
import logging

import pytest
import torch
import yaml
from orca_fixtures import (
    synthetic_items,
    tiny_gemma3_dir,
    tiny_llama_dir,
    write_jsonl,
    write_reference_checkpoint,
)
from safetensors.torch import load_file, save_file

from orca_judge import OrcaJudge, likelihoods
from orca_judge.checkpoint import read_checkpoint
from orca_judge.errors import CheckpointError

LONG = "The speaker says the next word is sun because the song goes that way. "
ITEMS = [
    *synthetic_items(3, seed=9, prefix="pub"),
    {**synthetic_items(1, seed=3, prefix="long")[0], "rationale": LONG * 4, "candidate": ""},
]


def reference_text(item: dict, skip_question: bool = False, skip_rationale: bool = False) -> str:
    """The reference dataset's input string (empty prompt, its block labels and flags)."""
    text = ""
    if not skip_rationale:
        text += " |context: " + item["rationale"]
    if not skip_question:
        text += " |question: " + item["question"]
    text += " |correct answer: " + item["reference"]
    return text + " |candidate answer: " + item["candidate"]


def reference_logits(merged, head: dict, tokenizer, texts: list[str]) -> torch.Tensor:
    """Head outputs following the reference's inference steps for one batch of texts.

    Right-padded batch without special tokens; input embeddings with the CLS token (if any)
    appended after the padded batch; hidden_states[-1] read at input_lengths - 1 (lengths
    counted after the CLS was added); the linear head. The reference passes the attention
    mask without a column for the CLS token: transformers 4.57.1, the version it pins, pads
    such a mask with zeros (the CLS is a key nothing attends to), while newer versions
    reject it, so that zero column is added here explicitly.
    """
    batch = tokenizer(
        texts,
        add_special_tokens=False,
        padding="longest",
        return_tensors="pt",
        padding_side="right",
    )
    ids, mask = batch["input_ids"], batch["attention_mask"]
    lengths = mask.sum(dim=1)
    embeds = merged.get_input_embeddings()(ids)
    if "cls_token" in head:
        cls = head["cls_token"].expand(len(texts), 1, -1).to(embeds.dtype)
        embeds = torch.cat([embeds, cls], dim=1)
        lengths = lengths + 1
        mask = torch.cat([mask, torch.zeros_like(mask[:, :1])], dim=1)
    with torch.inference_mode():
        out = merged(inputs_embeds=embeds, attention_mask=mask, output_hidden_states=True)
    pooled = out.hidden_states[-1][torch.arange(len(texts)), lengths - 1]
    return pooled @ head["linear.weight"].T + head["linear.bias"]


CASES = {
    "gemma3-multimodal-cls": (True, True, {"skip_rationale": True}),
    "gemma3-text": (False, False, {"skip_question": True, "model": "google/gemma-3-1b-it"}),
}


@pytest.mark.parametrize("case", CASES)
def test_published_gemma3_judge_scores_like_the_reference_and_does_not_depend_on_the_batch(
    tmp_path, case
):
    from transformers import AutoTokenizer

    multimodal, use_cls, args = CASES[case]
    base = tiny_gemma3_dir(multimodal)
    peft_lm, head = write_reference_checkpoint(
        tmp_path / "pub", base, use_cls_token=use_cls, args=args
    )
    judge = OrcaJudge.from_pretrained(tmp_path / "pub", backbone=str(base))
    single = judge.score(ITEMS, batch_size=1)
    batched = judge.score(ITEMS, batch_size=len(ITEMS))

    merged = peft_lm.merge_and_unload().eval()
    tok = AutoTokenizer.from_pretrained(base)
    flags = {k: args.get(k, False) for k in ("skip_question", "skip_rationale")}
    texts = [reference_text(item, **flags) for item in ITEMS]
    expected = torch.cat([reference_logits(merged, head, tok, [t]) for t in texts]).softmax(-1)
    got = torch.tensor([p.distribution["probs"] for p in single])
    torch.testing.assert_close(got, expected, atol=2e-5, rtol=1e-4)
    torch.testing.assert_close(
        torch.tensor([p.distribution["probs"] for p in batched]), got, atol=2e-5, rtol=1e-4
    )
    if multimodal:  # the adapter's vision-tower weights landed too (old spelling included)
        assert any("vision_tower" in key for key in judge.adapter[1])
    if use_cls:
        # The reference's own batched output moves with the batch; ours above does not.
        in_batch = reference_logits(merged, head, tok, texts).softmax(-1)
        assert (in_batch - expected).abs().max() > 1e-3
        # Saved natively, the token travels with the head.
        judge.save_pretrained(tmp_path / "native")
        assert load_file(tmp_path / "native" / "head.safetensors").keys() == {
            "weight",
            "bias",
            "cls_token",
        }
        again = OrcaJudge.from_pretrained(tmp_path / "native").score(ITEMS, batch_size=2)
        # Batch 2 against batch 4: padding changes float32 rounding (≈1e-8), nothing else.
        assert_predictions_close(again, batched)


def test_an_adapter_weight_that_lands_on_no_module_fails_naming_it(tmp_path):
    write_reference_checkpoint(tmp_path / "pub", tiny_llama_dir())
    weights = tmp_path / "pub" / "model" / "lm" / "adapter_model.safetensors"
    state = load_file(weights)
    stray = "base_model.model.model.layers.7.self_attn.q_proj.lora_A.weight"
    state[stray] = torch.zeros(4, 64)
    save_file(state, weights)
    with pytest.raises(CheckpointError, match=r"1 adapter weights match no LoRA module.*layers\.7"):
        OrcaJudge.from_pretrained(tmp_path / "pub")


def _layout_only(root, config=None, args=None, args_at=None):
    """The files read_checkpoint needs (no real weights) and an optional trainer args.yaml."""
    (root / "model" / "lm").mkdir(parents=True)
    (root / "tokenizer").mkdir()
    (root / "model" / "lm" / "adapter_config.json").write_text(
        json.dumps({"base_model_name_or_path": "org/base", "r": 4})
    )
    torch.save(
        {"linear.weight": torch.zeros(5, 8), "linear.bias": torch.zeros(5)},
        root / "model" / "model_minus_lm.pt",
    )
    config = {"score_type": "multinomial", **(config or {})}
    (root / "model" / "config.yaml").write_text(yaml.safe_dump(config))
    if args is not None:
        (args_at or root).joinpath("args.yaml").write_text(yaml.safe_dump(args))
    return root


def _flags(contents):
    cfg = contents.config
    return cfg.use_question, cfg.use_rationale, cfg.use_transcript


def test_reference_trainer_settings_come_from_args_yaml_else_the_defaults(tmp_path):
    plain = read_checkpoint(_layout_only(tmp_path / "plain"))
    assert _flags(plain) == (True, True, False)
    # Keys the reference never writes are not read.
    old_keys = {"no_rationale": True, "no_question": True, "use_transcription": True}
    assert _flags(read_checkpoint(_layout_only(tmp_path / "old", config=old_keys))) == (
        True,
        True,
        False,
    )
    args = {"skip_rationale": False, "skip_question": True, "add_transcript": True, "lr": 1e-4}
    root = _layout_only(tmp_path / "run" / "best", args=args, args_at=tmp_path / "run")
    run_best = read_checkpoint(root)
    assert _flags(run_best) == (False, True, True)
    at_root = read_checkpoint(_layout_only(tmp_path / "root", args={"skip_question": True}))
    assert _flags(at_root) == (False, True, False)
    # The reference's transcript sits inside the context block it skips with the rationale.
    both = {"skip_rationale": True, "add_transcript": True}
    assert _flags(read_checkpoint(_layout_only(tmp_path / "both", args=both))) == (
        True,
        False,
        False,
    )
    assert plain.input_settings == "defaults (no args.yaml)"
    assert run_best.input_settings == str(tmp_path / "run" / "args.yaml")
    bad = _layout_only(tmp_path / "bad", args={"skip_question": "yes"})
    with pytest.raises(CheckpointError, match=r"bad/args\.yaml: field 'skip_question' must be"):
        read_checkpoint(bad)


def test_a_cls_token_named_by_config_yaml_must_be_there(tmp_path):
    root = _layout_only(tmp_path / "pub", config={"use_cls_token": True})
    with pytest.raises(CheckpointError, match="use_cls_token but there is no cls_token"):
        read_checkpoint(root)


@pytest.mark.parametrize(
    ("recorded", "judge", "threshold"),
    [
        ("google/gemma-3-4b-it", "Gemma-3-4B", 0.05),
        ("/models/Llama-3.2-3B-Instruct", "Llama-3.2-3B", 0.05),
        ("allenai/OLMo-2-0425-1B-Instruct", "OLMo-2-1B", 0.005),
    ],
)
def test_published_judges_are_recognised_by_the_backbone_they_record(recorded, judge, threshold):
    from orca_judge.checkpoint.published import published_clamp

    where = {"adapter_config.json base_model_name_or_path": recorded}
    choice = published_clamp(where, None, "multinomial", 128)
    assert choice.threshold == threshold and f"published {judge} judge" in choice.reason
    other = published_clamp(where, None, "multinomial", 16)
    assert other.threshold is None and "LoRA r=16 is not the published judge" in other.reason


def test_a_local_copy_naming_no_backbone_is_recognised_by_its_architecture():
    from transformers import Gemma3Config

    from orca_judge.checkpoint.published import by_architecture, published_clamp

    config = Gemma3Config(text_config={"hidden_size": 2560, "num_hidden_layers": 34})
    assert by_architecture(config)[0].name == "Gemma-3-4B"
    choice = published_clamp({"args.yaml model": "/scratch/base"}, config, "multinomial", 128)
    assert choice.threshold == 0.05 and "architecture (gemma3, hidden size 2560" in choice.reason
    assert published_clamp({}, tiny_gemma_config(), "multinomial", 128).threshold is None


def tiny_gemma_config():
    from transformers import AutoConfig

    return AutoConfig.from_pretrained(tiny_gemma3_dir(False))


@pytest.fixture(scope="module")
def gemma_4b_copy(tmp_path_factory):
    """A tiny stand-in of the published Gemma-3-4B judge as a local copy (r 128)."""
    root = tmp_path_factory.mktemp("published") / "orca-gemma-4b"
    write_reference_checkpoint(
        root, tiny_gemma3_dir(False), lora_r=128, base_model_name="google/gemma-3-4b-it"
    )
    return root


def test_orca_score_reports_published_threshold_settings_and_truncation(
    gemma_4b_copy, tmp_path, capsys
):
    from orca_judge.cli import score as cli_score

    # About 700 tokens: over the old fixed limit of 512, within the backbone's 1024.
    items = [*ITEMS[:2], {**ITEMS[3], "id": "long", "rationale": LONG * 25}]
    path = write_jsonl(tmp_path / "items.jsonl", items)
    common = ["--checkpoint", str(gemma_4b_copy), "--input", str(path), "--no-progress"]
    backbone = ["--backbone", str(tiny_gemma3_dir(False))]
    assert cli_score.main([*common, *backbone, "--json"]) == 0
    captured = capsys.readouterr()
    out = json.loads(captured.out)
    setup = out["report"]["judge"]
    assert setup["clamp_threshold"] == 0.05 and setup["token_limit"] == 1024
    assert out["report"]["truncated"] == 0
    assert "clamp threshold 0.05: the paper's threshold for the published Gemma-3-4B" in (
        captured.err
    )
    assert "orca score: token limit 1024 (the backbone's context length)" in captured.err
    assert "input blocks (defaults (no args.yaml)): question yes, rationale yes" in captured.err
    long = next(p for p in out["predictions"] if p["id"] == "long")
    assert 512 < long["n_tokens"] <= 1024 and not long["truncated"]
    for p in out["predictions"]:
        clamped = likelihoods.clamp_mean(p["expected_unit"], p["variance_unit"], 0.05, 0.125)
        assert p["clamped_unit"] == pytest.approx(clamped)

    overrides = ["--max-tokens", "100", "--clamp-threshold", "0", "--use-question", "false"]
    assert cli_score.main([*common, *backbone, *overrides]) == 0
    captured = capsys.readouterr()
    assert "(1 truncated to the 100-token limit)" in captured.out
    assert "clamp threshold none: given when loading (clamping off)" in captured.err
    assert "use_question given when loading): question no, rationale yes" in captured.err


def test_metric_clamp_threshold_setting_and_truncation_are_recorded(gemma_4b_copy, caplog):
    from orca_judge.errors import OrcaMetricError
    from orca_judge.metric.judge_pass import JudgeSession
    from orca_judge.metric.per_item import per_item_rows, write_per_item
    from orca_judge.metric.settings import resolve_settings

    entry = {"checkpoint": str(gemma_4b_copy), "backbone": str(tiny_gemma3_dir(False))}
    with pytest.raises(OrcaMetricError, match="'clamp_threshold': expected a number >= 0"):
        resolve_settings({**entry, "clamp_threshold": "high"})
    settings = resolve_settings({**entry, "clamp_threshold": "0.2"})
    fields = ("question", "reference", "rationale", "transcript", "candidate")
    inputs = [{**{k: it[k] for k in fields}, "index": i} for i, it in enumerate(ITEMS[:2])]
    inputs[1]["rationale"] = LONG * 60  # beyond the backbone's 1024 positions
    judged = JudgeSession().run(settings, inputs, "t/f")
    with caplog.at_level(logging.INFO, logger="orca_judge"):
        write_per_item(judged, "t", "f", {}, None)
    rows = per_item_rows(judged, "t", "f")
    assert rows[0]["judge"]["clamp_threshold"] == 0.2
    assert rows[0]["judge"]["clamp_reason"] == "given when loading (clamping on)"
    assert [r["truncated"] for r in rows] == [False, True] and rows[1]["n_tokens"] == 1024
    assert "orca truncated 1 of 2 judge inputs to the judge's 1024-token limit" in caplog.text


def test_orca_train_builds_a_trainable_judge_on_a_multimodal_gemma3_backbone():
    from orca_fixtures import tiny_config

    from orca_judge.judge import encode_item, pad_token_id
    from orca_judge.model import collate
    from orca_judge.training.model_init import build_model

    cfg = tiny_config(backbone=str(tiny_gemma3_dir(True)))
    model, tokenizer, _ = build_model(cfg, torch.device("cpu"))
    encoded = [encode_item(tokenizer, it, cfg, model.backbone.config) for it in ITEMS]
    ids, mask = collate([e.input_ids for e in encoded], pad_token_id(tokenizer))
    model(ids, mask).logsumexp(-1).sum().backward()
    # Text never reaches the vision tower, so only its LoRA weights get no gradient.
    grads = {
        n: p.grad
        for n, p in model.named_parameters()
        if p.requires_grad and "vision_tower" not in n
    }
    assert "head.weight" in grads and any("language_model" in n for n in grads)
    assert all(g is not None and torch.isfinite(g).all() for g in grads.values())
    # A CLS token trains with the head (orca train --use-cls-token true).
    cls_model, _, _ = build_model(tiny_config(use_cls_token=True), torch.device("cpu"))
    start = cls_model.cls_token.detach().clone()
    assert start.abs().sum() > 0  # N(0, 1) like the reference, not zeros
    cls_model(ids, mask).logsumexp(-1).sum().backward()
    assert cls_model.cls_token.grad is not None and cls_model.cls_token.grad.abs().sum() > 0


def assert_predictions_close(got: list, expected: list) -> None:
    """Same fields and texts; every number equal up to float32 rounding."""
    assert len(got) == len(expected)
    for a, b in zip(got, expected, strict=True):
        assert_values_close(a.to_dict(), b.to_dict())


def assert_values_close(a: object, b: object) -> None:
    if isinstance(a, dict):
        assert isinstance(b, dict) and a.keys() == b.keys()
        for key in a:
            assert_values_close(a[key], b[key])
    elif isinstance(a, (list, tuple)):
        assert isinstance(b, (list, tuple)) and len(a) == len(b)
        for x, y in zip(a, b, strict=True):
            assert_values_close(x, y)
    elif isinstance(a, float) and not isinstance(a, bool):
        assert b == pytest.approx(a, rel=1e-5, abs=1e-6)
    else:
        assert a == b
