"""Checkpoint save/load round trip, the published-layout loader, and bad checkpoint directories."""

import json
import shutil
import warnings

import pytest
import torch
import yaml
from orca_fixtures import synthetic_items, tiny_llama_dir, tiny_trained_checkpoint

from orca_judge import OrcaJudge
from orca_judge.checkpoint import CheckpointError
from orca_judge.judge import BackboneMismatchError

ITEMS = synthetic_items(12, seed=5, prefix="eval")


def test_save_then_load_gives_bit_identical_predictions(tmp_path):
    judge = OrcaJudge.from_pretrained(tiny_trained_checkpoint())
    first = judge.score(ITEMS, batch_size=4)
    judge.save_pretrained(tmp_path / "copy")
    again = OrcaJudge.from_pretrained(tmp_path / "copy").score(ITEMS, batch_size=4)
    assert [p.to_dict() for p in again] == [p.to_dict() for p in first]
    assert sorted(p.name for p in (tmp_path / "copy").iterdir()) == [
        "README.md",
        "adapter",
        "head.safetensors",
        "metrics.json",
        "orca_judge.json",
        "tokenizer",
    ]


def test_checkpoint_records_backbone_identity_config_and_attribution():
    root = tiny_trained_checkpoint()
    meta = json.loads((root / "orca_judge.json").read_text())
    assert meta["config"]["likelihood"] == "multinomial" and meta["pooling"] == "last"
    assert (
        meta["backbone"]["id"] == str(tiny_llama_dir())
        and len(meta["backbone"]["fingerprint"]) == 32
    )
    assert "CC-BY-4.0" in (root / "README.md").read_text()
    assert "clamp_threshold" in json.loads((root / "metrics.json").read_text())


def test_predictions_carry_both_scales_distribution_and_token_counts():
    pred = OrcaJudge.from_pretrained(tiny_trained_checkpoint()).score(ITEMS[:1])[0]
    assert pred.expected == pytest.approx(1 + 4 * pred.expected_unit)
    assert pred.variance == pytest.approx(16 * pred.variance_unit)
    assert sum(pred.distribution["probs"]) == pytest.approx(1.0)
    assert pred.n_tokens > 5 and pred.truncated is False


def test_length_sorted_batching_does_not_change_predictions():
    judge = OrcaJudge.from_pretrained(tiny_trained_checkpoint())
    batched = judge.score(ITEMS, batch_size=5)
    single = judge.score(ITEMS, batch_size=1)
    for a, b in zip(batched, single, strict=True):
        assert a.id == b.id and a.expected_unit == pytest.approx(b.expected_unit, abs=1e-5)


def _published_checkpoint(root, score_type, head_rows):
    """Write a checkpoint the way the published ORCA checkpoints are laid out."""
    from peft import LoraConfig, get_peft_model
    from transformers import AutoModelForCausalLM, AutoTokenizer

    torch.manual_seed(1)
    lm = AutoModelForCausalLM.from_pretrained(tiny_llama_dir())
    lora = LoraConfig(
        r=4,
        lora_alpha=4,
        target_modules=["q_proj", "v_proj", "down_proj"],
        task_type="CAUSAL_LM",
        init_lora_weights=False,
    )
    peft_lm = get_peft_model(lm, lora)
    (root / "model").mkdir(parents=True)
    peft_lm.save_pretrained(root / "model" / "lm")
    head = {
        "linear.weight": torch.randn(head_rows, 64) * 0.5,
        "linear.bias": torch.randn(head_rows),
    }
    torch.save(head, root / "model" / "model_minus_lm.pt")
    (root / "model" / "config.yaml").write_text(yaml.safe_dump({"score_type": score_type}))
    AutoTokenizer.from_pretrained(tiny_llama_dir()).save_pretrained(root / "tokenizer")
    return peft_lm, head


def _reference_logits(peft_lm, head, texts):
    """Causal LM with the adapter merged, final hidden state of the last token, linear head."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(tiny_llama_dir())
    merged = peft_lm.merge_and_unload().eval()
    rows = []
    with torch.inference_mode():
        for text in texts:
            ids = torch.tensor([tok(text, add_special_tokens=False)["input_ids"]])
            hidden = merged(input_ids=ids, output_hidden_states=True).hidden_states[-1][0, -1]
            rows.append(hidden @ head["linear.weight"].T + head["linear.bias"])
    return torch.stack(rows)


def test_published_layout_multinomial_checkpoint_loads_with_the_same_template_and_head(tmp_path):
    from orca_judge.template import format_text

    peft_lm, head = _published_checkpoint(tmp_path / "pub", "multinomial", 5)
    judge = OrcaJudge.from_pretrained(tmp_path / "pub")
    preds = judge.score(ITEMS[:4])
    expected = torch.softmax(
        _reference_logits(peft_lm, head, [format_text(r) for r in ITEMS[:4]]), -1
    )
    got = torch.tensor([p.distribution["probs"] for p in preds])
    torch.testing.assert_close(got, expected, atol=1e-4, rtol=1e-3)


def test_published_bernoulli_two_logit_head_uses_the_first_softmax_probability(tmp_path):
    from orca_judge.template import format_text

    peft_lm, head = _published_checkpoint(tmp_path / "pub", "bernoulli_kl", 2)
    preds = OrcaJudge.from_pretrained(tmp_path / "pub").score(ITEMS[:3])
    p_first = torch.softmax(
        _reference_logits(peft_lm, head, [format_text(r) for r in ITEMS[:3]]), -1
    )[:, 0]
    assert [p.variance for p in preds] == [None] * 3
    torch.testing.assert_close(
        torch.tensor([p.expected_unit for p in preds]), p_first, atol=1e-4, rtol=1e-3
    )


@pytest.mark.parametrize(
    ("victim", "message"),
    [
        ("head.safetensors", "missing head weights"),
        ("adapter/adapter_model.safetensors", "missing LoRA adapter weights"),
        ("tokenizer", "missing tokenizer directory"),
        ("orca_judge.json", "missing orca_judge.json"),
    ],
)
def test_checkpoint_with_a_missing_file_is_rejected_naming_it(tmp_path, victim, message):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    target = root / victim
    shutil.rmtree(target) if target.is_dir() else target.unlink()
    with pytest.raises(CheckpointError, match=message):
        OrcaJudge.from_pretrained(root)


def test_likelihood_that_does_not_match_the_head_is_rejected(tmp_path):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    meta = json.loads((root / "orca_judge.json").read_text())
    meta["config"]["likelihood"] = "beta"
    (root / "orca_judge.json").write_text(json.dumps(meta))
    with pytest.raises(CheckpointError, match="does not fit likelihood 'beta'"):
        OrcaJudge.from_pretrained(root)


def test_different_backbone_weights_warn_or_refuse(tmp_path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    other = AutoModelForCausalLM.from_pretrained(tiny_llama_dir())
    with torch.no_grad():
        other.model.layers[1].mlp.down_proj.weight.add_(0.05)
    other.save_pretrained(tmp_path / "other")
    AutoTokenizer.from_pretrained(tiny_llama_dir()).save_pretrained(tmp_path / "other")
    with pytest.warns(UserWarning, match="weight fingerprint"):
        OrcaJudge.from_pretrained(tiny_trained_checkpoint(), backbone=str(tmp_path / "other"))
    with pytest.raises(BackboneMismatchError):
        OrcaJudge.from_pretrained(
            tiny_trained_checkpoint(), backbone=str(tmp_path / "other"), strict_backbone=True
        )
    with warnings.catch_warnings():
        warnings.simplefilter("error", UserWarning)
        OrcaJudge.from_pretrained(tiny_trained_checkpoint())
