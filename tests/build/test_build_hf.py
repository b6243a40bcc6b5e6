"""`aqua build --iaqd hf` with a tiny chat model built offline (real tokenizer and template).

Its random weights never write a valid question: every reply is rejected, asked again with
the reason, and the template stands in, all counted in the manifest; a rerun reads every
reply from the cache.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from shared_cache import shared_artefact
from shared_data import shared_data, shared_path
from support.tiny_audio_lm import build_tiny_chat_lm

from aqua_tasks.build.api import MMAU_OUTPUT, GeneratorSettings, build_file
from aqua_tasks.build.builder import manifest_path
from aqua_tasks.build.iaqd_llm import SYSTEM_PROMPT
from aqua_tasks.cli import build as cli_build

MMAU = shared_path("mmau") / "mmau-test-mini.json"
LIMIT = 3
ATTEMPTS = 2
# Short replies keep the tiny model's generation to milliseconds.
EXTRA = {"max_new_tokens": 8}


@pytest.fixture(scope="module")
def chat_model() -> Path:
    return shared_artefact("tiny-chat", build_tiny_chat_lm)


@pytest.fixture(scope="module")
def hf_build(tmp_path_factory, chat_model):
    shared_data("mmau")
    root = tmp_path_factory.mktemp("hf-build")
    settings = GeneratorSettings(
        model=str(chat_model), cache_dir=str(root / "cache"), max_attempts=ATTEMPTS, extra=EXTRA
    )
    first = build_file(MMAU, root / "a", generator="hf", settings=settings, limit=LIMIT)
    again = build_file(MMAU, root / "b", generator="hf", settings=settings, limit=LIMIT)
    return root, first.manifest, again.manifest


def test_tiny_chat_model_has_a_real_tokenizer_and_chat_template(chat_model):
    from transformers import AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(chat_model, local_files_only=True)
    text = tokenizer.apply_chat_template(
        [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": "Q"}],
        add_generation_prompt=True,
        tokenize=False,
    )
    assert text == (
        f"<|im_start|>system\n{SYSTEM_PROMPT}<|im_end|>\n"
        "<|im_start|>user\nQ<|im_end|>\n<|im_start|>assistant\n"
    )


def test_invalid_replies_are_retried_then_the_template_stands_in_and_is_counted(hf_build):
    root, manifest, _ = hf_build
    assert manifest["counts"]["built_clips"] == LIMIT
    iaqd = manifest["iaqd"]
    assert iaqd == {
        "attempts": LIMIT * ATTEMPTS,
        "cached_replies": 0,
        "fallback_to_template": LIMIT,
        "written_by_template": LIMIT,
    }
    # Eight random tokens are never a JSON object: every reply is rejected as such.
    assert manifest["iaqd_failures"] == {"not_json": LIMIT * ATTEMPTS}
    fell_back = [r for r in manifest["items"] if "iaqd_template_fallback" in r["reasons"]]
    assert len(fell_back) == LIMIT
    settings = manifest["generator"]["settings"]
    assert manifest["generator"]["name"] == "hf"
    assert settings["kind"] == "hf" and settings["decoding"] == "greedy"
    assert settings["max_new_tokens"] == EXTRA["max_new_tokens"]
    assert settings["max_attempts"] == ATTEMPTS and settings["system_prompt"] == SYSTEM_PROMPT
    entries = json.loads((root / "a" / MMAU_OUTPUT).read_text())
    assert [e["type"] for e in entries[:4]] == ["Solvable", "AAD", "IASD", "IAQD"]
    assert all(e["options"][-1] == "Unanswerable" for e in entries if e["type"] == "IAQD")


def test_a_rerun_reads_every_reply_from_the_cache_and_writes_the_same_bytes(hf_build):
    root, first, again = hf_build
    assert again["iaqd"]["cached_replies"] == LIMIT * ATTEMPTS
    assert again["iaqd_failures"] == first["iaqd_failures"]
    assert (root / "a" / MMAU_OUTPUT).read_bytes() == (root / "b" / MMAU_OUTPUT).read_bytes()


def test_cli_hf_without_a_model_folder_is_a_one_line_error(tmp_path, capsys):
    code = cli_build.main(
        ["--input", str(MMAU), "--output", str(tmp_path), "--iaqd", "hf", "--no-progress"]
    )
    assert code == 2
    assert capsys.readouterr().err.strip() == (
        "aqua build: error: --iaqd hf needs --model (a local model folder)"
    )
    assert not manifest_path(tmp_path / MMAU_OUTPUT).exists()


def test_cli_hf_with_a_missing_model_folder_stops_before_reading_anything(tmp_path, capsys):
    folder = tmp_path / "no-such-model"
    argv = ["--input", str(tmp_path / "absent.json"), "--output", str(tmp_path / "o")]
    code = cli_build.main([*argv, "--iaqd", "hf", "--model", str(folder), "--no-progress"])
    assert code == 2
    # Not transformers' "Repo id must be in the form …", and before the (absent) input is read.
    assert capsys.readouterr().err.strip() == (
        f"aqua build: error: --iaqd hf --model {str(folder)!r}: no such folder (a local chat "
        "model folder with its config, weights and tokenizer; nothing is downloaded)"
    )
