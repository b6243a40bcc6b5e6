"""Gemma-3 (the paper's smallest backbone's architecture, in miniature) as a judge backbone:
trained by `orca train`, saved, reloaded and scored identically by `orca score`, the Python
API and `metric: orca` in a real lm_eval run."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from orca_fixtures import (
    THIRD_PARTY_YAML,
    synthetic_items,
    tiny_gemma3_judge_backbone_dir,
    write_jsonl,
)

from orca_judge import OrcaJudge
from orca_judge.cli.main import main as orca
from orca_judge.judge import encode_item

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def trained(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("gemma3")
    train = write_jsonl(root / "train.jsonl", synthetic_items(48, 1, "tr"))
    dev = write_jsonl(root / "dev.jsonl", synthetic_items(24, 2, "dv"))
    args = ["train", "--train", str(train), "--dev", str(dev), "--backbone",
            str(tiny_gemma3_judge_backbone_dir()), "--output", str(root / "judge"),
            "--max-steps", "6", "--lr", "1e-3", "--lora-r", "4", "--batch-size", "8",
            "--grad-accum", "1", "--warmup-steps", "2", "--eval-every", "3",
            "--heldout-fraction", "0.5", "--no-progress"]  # fmt: skip
    assert orca(args) == 0
    return {"root": root, "judge": root / "judge", "dev": dev}


def test_the_backbone_has_gemma_3_270m_conventions():
    from transformers import AutoConfig

    config = AutoConfig.from_pretrained(tiny_gemma3_judge_backbone_dir())
    assert config.head_dim != config.hidden_size // config.num_attention_heads
    assert config.num_key_value_heads == 1 and config.tie_word_embeddings
    assert config.layer_types == ["sliding_attention", "full_attention"]


def test_a_trained_gemma_judge_reloads_and_scores_identically(trained, capsys):
    judge = OrcaJudge.from_pretrained(trained["judge"])
    # The body only: no 262k-row LM head on the real backbone, none here.
    assert not any("lm_head" in name for name, _ in judge.model.named_modules())
    items = [json.loads(line) for line in trained["dev"].read_text().splitlines()]
    in_process = judge.score(items)
    capsys.readouterr()
    assert orca(["score", "--checkpoint", str(trained["judge"]), "--input",
                 str(trained["dev"]), "--json", "--no-progress"]) == 0  # fmt: skip
    rows = json.loads(capsys.readouterr().out)["predictions"]
    assert [r["id"] for r in rows] == [p.id for p in in_process]
    assert [r["expected"] for r in rows] == pytest.approx([p.expected for p in in_process],
                                                          abs=1e-6)  # fmt: skip
    metrics = json.loads((trained["judge"] / "metrics.json").read_text())
    assert metrics["dev"]["n"] + metrics["heldout"]["n"] == len(items)


def test_gemma_inputs_follow_the_reference_no_bos_unless_asked(trained):
    judge = OrcaJudge.from_pretrained(trained["judge"])
    item = synthetic_items(1, 3)[0]
    bos = judge.tokenizer.bos_token_id
    assert judge.tokenizer("x").input_ids[0] == bos  # the tokenizer's own default adds it
    plain = encode_item(judge.tokenizer, item, judge.config, judge.model.backbone.config)
    assert plain.input_ids[0] != bos  # the reference adds no BOS/EOS
    asked = dataclasses.replace(judge.config, add_special_tokens=True)
    with_bos = encode_item(judge.tokenizer, item, asked, judge.model.backbone.config)
    assert with_bos.input_ids == [bos, *plain.input_ids]


def test_metric_orca_in_a_real_lm_eval_run_scores_with_the_gemma_judge(trained):
    root = trained["root"]
    qa = write_jsonl(root / "qa.jsonl", [
        {"question": f"What is the bird singing {i}?", "answer": "the sun"} for i in range(4)
    ])  # fmt: skip
    (root / "tasks").mkdir()
    task = THIRD_PARTY_YAML.format(
        name="gemma_qa", data=qa, metric="orca", checkpoint=trained["judge"]
    )
    (root / "tasks" / "gemma_qa.yaml").write_text(task)
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    done = subprocess.run(
        [str(BIN / "lm_eval"), "--model", "dummy", "--tasks", "gemma_qa", "--include_path",
         str(root / "tasks"), "--output_path", str(root / "run")],
        capture_output=True, text=True, timeout=600, env=env,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr[-3000:]
    (results,) = (root / "run").rglob("results_*.json")
    got = json.loads(results.read_text())["results"]["gemma_qa"]
    judge = OrcaJudge.from_pretrained(trained["judge"])
    preds = judge.score(
        [{"question": f"What is the bird singing {i}?", "reference": "the sun",
          "candidate": "lol"} for i in range(4)]
    )  # fmt: skip
    mean = sum(p.clamped_unit for p in preds) / len(preds)
    assert got["orca,whole"] == pytest.approx(mean, abs=1e-5)
    assert got["orca_disagreement,whole"] == pytest.approx(
        sum(p.variance_unit for p in preds) / len(preds), abs=1e-5
    )
