"""Backbone pooling, LoRA target detection, head initialisation and weight fingerprints."""

import pytest
import torch
from orca_fixtures import tiny_bert_dir, tiny_llama_dir

from orca_judge.config import OrcaConfig
from orca_judge.errors import BackboneLoadError
from orca_judge.model import (
    OrcaModel,
    add_lora,
    collate,
    detect_lora_targets,
    is_encoder,
    load_backbone,
    pool_last,
    weights_fingerprint,
)

SEQS = [[5, 17, 9, 30, 41, 8], [12, 7], [3, 3, 3, 60]]


def _model(path, pooling):
    base = load_backbone(str(path), torch.float32)
    model = OrcaModel(base, "multinomial", pooling, base.config.hidden_size)
    model.init_head(0)
    return model.eval()


@pytest.mark.parametrize("side", ["right", "left"])
def test_last_token_pooling_equals_the_unpadded_result_under_either_padding(side):
    model = _model(tiny_llama_dir(), "last")
    with torch.inference_mode():
        alone = torch.cat([model(*collate([s], 0)) for s in SEQS])
        padded = model(*collate(SEQS, 0, padding_side=side))
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-4)


def test_mean_pooling_of_an_encoder_ignores_padding():
    model = _model(tiny_bert_dir(), "mean")
    with torch.inference_mode():
        alone = torch.cat([model(*collate([s], 0)) for s in SEQS])
        padded = model(*collate(SEQS, 0))
    torch.testing.assert_close(padded, alone, atol=1e-5, rtol=1e-4)


def test_pool_last_picks_the_last_attended_position():
    hidden = torch.arange(12.0).reshape(2, 3, 2)
    mask = torch.tensor([[1, 1, 0], [0, 1, 1]])
    assert pool_last(hidden, mask).tolist() == [[2.0, 3.0], [10.0, 11.0]]


def test_architectures_get_their_own_lora_targets_and_pooling():
    llama = load_backbone(str(tiny_llama_dir()), torch.float32)
    bert = load_backbone(str(tiny_bert_dir()), torch.float32)
    assert detect_lora_targets(llama) == [
        "q_proj",
        "k_proj",
        "v_proj",
        "o_proj",
        "gate_proj",
        "up_proj",
        "down_proj",
    ]
    assert detect_lora_targets(bert) == ["query", "key", "value", "dense"]
    assert not is_encoder(llama.config) and is_encoder(bert.config)


def test_lora_leaves_only_adapters_trainable_and_starts_as_the_identity():
    base = load_backbone(str(tiny_llama_dir()), torch.float32)
    ids, mask = collate(SEQS, 0)
    with torch.inference_mode():
        before = base(input_ids=ids, attention_mask=mask).last_hidden_state
    wrapped = add_lora(base, OrcaConfig(backbone="x", lora_r=4))
    trainable = [n for n, p in wrapped.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    with torch.inference_mode():
        after = wrapped(input_ids=ids, attention_mask=mask).last_hidden_state
    torch.testing.assert_close(after, before)


def test_head_starts_near_zero_so_predictions_start_flat():
    model = _model(tiny_llama_dir(), "last")
    assert model.head.bias.abs().max() == 0 and 0 < model.head.weight.abs().max() < 0.01
    with torch.inference_mode():
        probs = torch.softmax(model(*collate(SEQS, 0)), -1)
    torch.testing.assert_close(probs, torch.full_like(probs, 0.2), atol=0.02, rtol=0)


def test_fingerprint_ignores_dtype_but_changes_with_the_weights():
    fp32 = load_backbone(str(tiny_llama_dir()), torch.float32)
    bf16 = load_backbone(str(tiny_llama_dir()), torch.bfloat16)
    assert weights_fingerprint(fp32) == weights_fingerprint(bf16)
    with torch.no_grad():
        fp32.layers[0].mlp.up_proj.weight.mul_(1.5)
    assert weights_fingerprint(fp32) != weights_fingerprint(bf16)


def test_unloadable_backbone_raises_an_error_naming_it(tmp_path):
    with pytest.raises(BackboneLoadError, match="no-such-org/no-such-model"):
        load_backbone("no-such-org/no-such-model", torch.float32)
