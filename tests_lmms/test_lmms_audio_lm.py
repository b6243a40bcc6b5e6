"""`aqua-audiolm` under the real `lmms-eval` CLI: a tiny Qwen2-Audio on CPU, real clips."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from conftest import REPO, lmms_eval, lmms_results, lmms_samples, metadata_env, run_cli

from aqua_tasks.core.generation_failure import FAILED_REPLY_PREFIX
from eval_plugins.lmms_eval.aqua import include_path
from eval_plugins.lmms_eval.aqua.models import lm_eval_gen_kwargs

LIMIT = 2
TASKS = ("aqua_animal", "aqua-cot_vocal")


@pytest.fixture(scope="module")
def tiny_model(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("tiny") / "qwen2-audio"
    run_cli(sys.executable, REPO / "tests" / "support" / "tiny_audio_lm.py", out)
    return out


@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory, tiny_model, released_dir, released_audio_root) -> Path:
    out = tmp_path_factory.mktemp("lmms-tiny")
    lmms_eval(
        *("--include_path", include_path(), "--model", "aqua-audiolm"),
        *("--model_args", f"pretrained={tiny_model},device=cpu,dtype=float32"),
        *("--tasks", ",".join(TASKS), "--limit", LIMIT),
        # lmms-eval's name for the reply length; aqua-audiolm reads it as max_gen_toks.
        *("--gen_kwargs", "max_new_tokens=8"),
        *("--log_samples", "--output_path", out),
        env=metadata_env(released_dir, released_audio_root),
    )
    return out


def test_tiny_audio_lm_answers_every_requested_item_on_cpu(tiny_run):
    results = lmms_results(tiny_run)
    for task in TASKS:
        figures = results["results"][task]
        assert figures["n_items,none"] == LIMIT
        assert 0.0 <= figures["unparsed_rate,none"] <= 1.0
        rows = lmms_samples(tiny_run, task)
        assert [r["doc_id"] for r in rows] == list(range(LIMIT))
        # Real generations: text from the model, not the failure marker of a crashed batch.
        assert all(isinstance(r["filtered_resps"], str) for r in rows)
        assert not any(r["filtered_resps"].startswith(FAILED_REPLY_PREFIX) for r in rows)
    assert results["config"]["model"] == "aqua-audiolm"


def test_chain_of_thought_task_sends_its_instruction(tiny_run):
    (row, *_) = lmms_samples(tiny_run, "aqua-cot_vocal")
    assert row["input"].endswith('in the form "Answer: (letter)".')
    assert not row["input"].startswith("<audio>")


def test_max_new_tokens_becomes_max_gen_toks():
    assert lm_eval_gen_kwargs({"max_new_tokens": 8, "until": []}) == {
        "max_gen_toks": 8,
        "until": [],
    }
    assert lm_eval_gen_kwargs({"max_gen_toks": 4}) == {"max_gen_toks": 4}
    with pytest.raises(ValueError, match="both max_new_tokens=8 and max_gen_toks=4"):
        lm_eval_gen_kwargs({"max_new_tokens": 8, "max_gen_toks": 4})


@pytest.mark.parametrize(
    "family", ["audioflamingo3", "qwen3_omni_moe", "phi4_multimodal", "voxtral"]
)
def test_other_transformers_families_run_under_lmms_eval_through_our_registration(
    family, tmp_path, released_dir, released_audio_root
):
    # lmms-eval has no class of its own for these; aqua-audiolm runs each with its processor.
    model = tmp_path / family
    run_cli(
        sys.executable, REPO / "tests" / "support" / "tiny_audio_lm.py", model, "--family", family
    )
    out = tmp_path / "run"
    lmms_eval(
        *("--include_path", include_path(), "--model", "aqua-audiolm"),
        *("--model_args", f"pretrained={model},device=cpu,dtype=float32,batch_size=2"),
        *("--tasks", "aqua_animal", "--limit", LIMIT),
        *("--gen_kwargs", "max_new_tokens=4"),
        *("--log_samples", "--output_path", out),
        env=metadata_env(released_dir, released_audio_root),
    )
    assert lmms_results(out)["results"]["aqua_animal"]["n_items,none"] == LIMIT
    rows = lmms_samples(out, "aqua_animal")
    assert len(rows) == LIMIT and all(isinstance(r["filtered_resps"], str) for r in rows)
    assert not any(r["filtered_resps"].startswith(FAILED_REPLY_PREFIX) for r in rows)
