"""Checkpoint save/load round trip, atomic updates, the published-layout loader, bad directories."""

import json
import os
import shutil
import warnings
from pathlib import Path

import pytest
import torch
from orca_fixtures import (
    synthetic_items,
    tiny_llama_dir,
    tiny_trained_checkpoint,
    tiny_training,
    write_reference_checkpoint,
)
from safetensors.torch import load_file

from eval_common.errors import OutputError
from orca_judge import OrcaJudge
from orca_judge.checkpoint import (
    load_model,
    read_checkpoint,
    update_config,
    update_metrics,
)
from orca_judge.checkpoint.contents import FORMAT_1_TRAINING, LATER_TRAINING_AS_BEFORE
from orca_judge.config import OrcaConfig
from orca_judge.errors import BackboneMismatchError, CheckpointError

ITEMS = synthetic_items(12, seed=5, prefix="eval")


@pytest.mark.slow
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
        "training_args.json",
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


def test_model_card_of_a_trained_judge_quotes_its_tuned_clamp_threshold_and_final_metrics():
    root = tiny_trained_checkpoint()
    threshold = json.loads((root / "orca_judge.json").read_text())["config"]["clamp_threshold"]
    metrics = json.loads((root / "metrics.json").read_text())
    card = (root / "README.md").read_text()
    assert f"clamp threshold: {threshold}." in card
    assert f"- steps: {metrics['steps']}" in card
    assert f"- stopped_early: {metrics['stopped_early']}" in card


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
    return write_reference_checkpoint(
        root,
        tiny_llama_dir(),
        score_type=score_type,
        head_rows=head_rows,
        targets=["q_proj", "v_proj", "down_proj"],
    )


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


def _snapshot(root):
    return {p.relative_to(root): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def test_unmerged_judge_saves_the_same_head_adapter_and_config_it_loaded(tmp_path):
    original = tiny_trained_checkpoint()
    OrcaJudge.from_pretrained(original, merge=False).save_pretrained(tmp_path / "copy")
    saved, expected = _snapshot(tmp_path / "copy"), _snapshot(original)
    for name in ("orca_judge.json", "head.safetensors", "metrics.json", "README.md"):
        assert saved[Path(name)] == expected[Path(name)], name
    adapter = Path("adapter") / "adapter_model.safetensors"
    assert load_file(tmp_path / "copy" / adapter).keys() == load_file(original / adapter).keys()
    for key, value in load_file(original / adapter).items():
        assert torch.equal(load_file(tmp_path / "copy" / adapter)[key], value)


def test_trainable_load_gives_the_judges_logits_with_lora_and_head_trainable():
    from orca_judge.judge import batched_logits, encode_item, pad_token_id

    judge = OrcaJudge.from_pretrained(tiny_trained_checkpoint())
    expected, encoded = judge.logits(ITEMS, batch_size=4)
    loaded = load_model(tiny_trained_checkpoint(), trainable=True)
    trainable = {n for n, p in loaded.model.named_parameters() if p.requires_grad}
    assert trainable and all("lora_" in n or n.startswith("head.") for n in trainable)
    assert {"head.weight", "head.bias"} <= trainable
    backbone_config = loaded.model.backbone.config
    assert [encode_item(loaded.tokenizer, it, judge.config, backbone_config) for it in ITEMS] == (
        encoded
    )
    got = batched_logits(
        loaded.model,
        encoded,
        pad_id=pad_token_id(loaded.tokenizer),
        batch_size=4,
        device=loaded.device,
    )
    torch.testing.assert_close(got, expected, atol=1e-5, rtol=1e-4)


def test_judge_loading_goes_through_the_one_checkpoint_loader(monkeypatch):
    import orca_judge.judge as judge_module

    calls = []

    def spy(source, **kwargs):
        calls.append((source, kwargs))
        return load_model(source, **kwargs)

    monkeypatch.setattr(judge_module, "load_model", spy)
    OrcaJudge.from_pretrained(tiny_trained_checkpoint(), device="cpu")
    assert calls == [
        (
            tiny_trained_checkpoint(),
            {
                "device": "cpu",
                "dtype": None,
                "backbone": None,
                "strict_backbone": False,
                "merge": True,
                "overrides": {},
            },
        )
    ]


def test_a_trained_checkpoint_keeps_its_training_arguments_beside_its_config():
    root = tiny_trained_checkpoint()
    meta = json.loads((root / "orca_judge.json").read_text(encoding="utf-8"))
    assert set(meta["config"]) == set(OrcaConfig.field_names())
    recorded = json.loads((root / "training_args.json").read_text(encoding="utf-8"))
    # The training record: the arguments, and one process taking every batch whole.
    processes = {"world_size": 1, "per_process_batch": tiny_training().batch_size}
    assert recorded == {**tiny_training().to_dict(), **processes} and recorded["lr"] == 1e-3
    assert read_checkpoint(root).training == recorded
    judge = OrcaJudge.from_pretrained(root)
    assert judge.training == recorded


def _as_format_1(root):
    """The checkpoint as written before training_args.json: its arguments inside `config`."""
    meta = json.loads((root / "orca_judge.json").read_text(encoding="utf-8"))
    training = json.loads((root / "training_args.json").read_text(encoding="utf-8"))
    # Format 1 predates multi-process training: it never recorded the processes.
    training = {k: v for k, v in training.items() if k in FORMAT_1_TRAINING}
    meta["config"] = {**meta["config"], **training}
    (root / "orca_judge.json").write_text(json.dumps(meta), encoding="utf-8")
    (root / "training_args.json").unlink()
    return meta


def test_a_checkpoint_with_its_training_arguments_inside_its_config_loads_the_same(tmp_path):
    new = tiny_trained_checkpoint()
    old = shutil.copytree(new, tmp_path / "old")
    meta = _as_format_1(old)
    new_training = {
        k: v for k, v in read_checkpoint(new).training.items() if k in FORMAT_1_TRAINING
    }
    assert read_checkpoint(old).config == read_checkpoint(new).config
    assert read_checkpoint(old).training == new_training
    assert (
        OrcaJudge.from_pretrained(old).fingerprint() == OrcaJudge.from_pretrained(new).fingerprint()
    )
    # An update keeps what the older file recorded, and the checkpoint still reads the same.
    update_config(old, clamp_threshold=0.02)
    after = json.loads((old / "orca_judge.json").read_text(encoding="utf-8"))
    assert after["config"] == {**meta["config"], "clamp_threshold": 0.02}
    assert read_checkpoint(old).training == new_training
    # Keys that are neither OrcaConfig nor format-1 training fields are still refused.
    meta["config"]["lora_rank"] = 4
    (old / "orca_judge.json").write_text(json.dumps(meta), encoding="utf-8")
    with pytest.raises(CheckpointError, match="unknown OrcaConfig fields: lora_rank"):
        read_checkpoint(old)


def test_format_1_training_values_are_the_training_defaults_they_were_split_from():
    # Frozen in the checkpoint reader (fingerprints of judges that record no training
    # arguments cover them); equal to the defaults at the split.
    from orca_judge.training.arguments import TrainingArguments

    defaults = TrainingArguments().to_dict()
    assert {k: defaults[k] for k in FORMAT_1_TRAINING} == FORMAT_1_TRAINING
    # Fields added since default to what format 1 did, and a judge recording that value
    # fingerprints as one recording nothing.
    assert {k: defaults[k] for k in set(defaults) - set(FORMAT_1_TRAINING)} == (
        LATER_TRAINING_AS_BEFORE
    )


def test_clamp_threshold_update_rewrites_only_that_field_and_validates(tmp_path):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    before = json.loads((root / "orca_judge.json").read_text())
    config = update_config(root, clamp_threshold=0.02)
    after = json.loads((root / "orca_judge.json").read_text())
    assert config.clamp_threshold == 0.02 and after["config"]["clamp_threshold"] == 0.02
    before["config"]["clamp_threshold"] = 0.02
    assert after == before
    with pytest.raises(ValueError, match=r"OrcaConfig\.likelihood='gaussian'"):
        update_config(root, likelihood="gaussian")
    assert json.loads((root / "orca_judge.json").read_text()) == after
    assert OrcaJudge.from_pretrained(root).config.clamp_threshold == 0.02


def test_metrics_update_merges_entries_or_replaces_the_file(tmp_path):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    before = json.loads((root / "metrics.json").read_text())
    merged = update_metrics(root, {"heldout": {"n": 3}})
    assert merged == {**before, "heldout": {"n": 3}}
    assert json.loads((root / "metrics.json").read_text()) == merged
    assert update_metrics(root, {"steps": 1}, replace=True) == {"steps": 1}
    assert (root / "metrics.json").read_text() == '{\n  "steps": 1\n}\n'


@pytest.mark.parametrize(
    ("update", "victim"),
    [
        (lambda root: update_metrics(root, {"heldout": {"n": 3}}), "metrics.json"),
        (lambda root: update_config(root, clamp_threshold=0.02), "orca_judge.json"),
    ],
)
def test_an_update_that_fails_at_the_rename_leaves_the_old_file_and_no_debris(
    tmp_path, monkeypatch, update, victim
):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    before = _snapshot(root)

    def crash(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", crash)
    with pytest.raises(OutputError, match=f"disk full writing .*{victim}"):
        update(root)
    assert _snapshot(root) == before
    assert json.loads((root / victim).read_text()) == json.loads(before[Path(victim)])


def test_a_metric_that_is_not_json_leaves_metrics_json_untouched(tmp_path):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    before = _snapshot(root)
    with pytest.raises(TypeError, match="not JSON serializable"):
        update_metrics(root, {"when": object()})
    assert _snapshot(root) == before


def test_updated_files_keep_the_usual_permissions(tmp_path):
    root = shutil.copytree(tiny_trained_checkpoint(), tmp_path / "ckpt")
    mode = (root / "metrics.json").stat().st_mode & 0o777
    update_metrics(root, {"heldout": {"n": 3}})
    update_config(root, clamp_threshold=0.02)
    assert (root / "metrics.json").stat().st_mode & 0o777 == mode
    assert (root / "orca_judge.json").stat().st_mode & 0o777 == mode


def test_published_layout_checkpoints_are_not_updated_in_place(tmp_path):
    _published_checkpoint(tmp_path / "pub", "beta", 2)
    with pytest.raises(CheckpointError, match="only native checkpoints update"):
        update_metrics(tmp_path / "pub", {"heldout": {}})
