"""Bad ORCA input files: one line naming the file (and line, stage, field) and what is allowed."""

from __future__ import annotations

import shutil
from fractions import Fraction
from pathlib import Path

import pytest
import torch
from orca_fixtures import synthetic_items, tiny_llama_dir, write_jsonl
from safetensors.torch import load_file

from orca_judge.checkpoint import read_checkpoint
from orca_judge.cli import score as cli_score
from orca_judge.cli import train as cli_train
from orca_judge.config import OrcaConfig
from orca_judge.data import load_items
from orca_judge.errors import BackboneLoadError, CheckpointError, DataError
from orca_judge.model import load_backbone
from orca_judge.training.arguments import TrainingArguments, setting_problem

RATED = synthetic_items(4, seed=0)


@pytest.fixture
def rated_files(tmp_path) -> tuple[Path, Path]:
    return write_jsonl(tmp_path / "train.jsonl", RATED), write_jsonl(tmp_path / "dev.jsonl", RATED)


def _train_error(tmp_path, capsys, config_text: str | bytes) -> str:
    config = tmp_path / "judge.yaml"
    if isinstance(config_text, bytes):
        config.write_bytes(config_text)
    else:
        config.write_text(config_text, encoding="utf-8")
    argv = ["--config", str(config), "--output", str(tmp_path / "out"), "--backbone", "b"]
    assert cli_train.main(argv) == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.startswith("orca train: error: "), err
    return err.removeprefix("orca train: error: ").rstrip("\n")


BASE = "train: train.jsonl\ndev: dev.jsonl\n"


def test_a_stage_key_of_the_wrong_type_names_the_file_stage_and_key(tmp_path, capsys, rated_files):
    text = BASE + "stages:\n  - name: warm-up\n    max_steps: two\n  - name: human\n"
    assert _train_error(tmp_path, capsys, text) == (
        f"{tmp_path / 'judge.yaml'}: stage 'warm-up': max_steps: expected a whole number >= 1, "
        "got 'two'"
    )


@pytest.mark.parametrize(
    ("yaml_text", "expected"),
    [
        ("lr: fast\n", "stage 'main': lr: expected a number, got 'fast'"),
        ("lr: .nan\n", "stage 'main': lr: expected a finite number with 0 < lr, got nan"),
        ("use_question: maybe\n", "stage 'main': use_question: expected true or false"),
        ("lora_dropout: 2\n", "lora_dropout: expected a finite number with 0 <="),
        ("max_tokens: 0\n", "max_tokens: expected a finite number with 1 <="),
        ("lora_target_modules: q_proj\n", "lora_target_modules: expected a list of module names"),
        ("stages: [warm]\n", "stage 1: expected a mapping, got 'warm'"),
        ("stages: {name: warm}\n", "stages: expected a list of stages"),
        ("stages:\n  - name: [a]\n", "name: expected a name, got ['a']"),
        ("stages:\n  - dev: 3\n", "stage 1: dev: expected a file name, got 3"),
    ],
)
def test_every_stage_key_is_checked_before_any_data_is_read(
    tmp_path, capsys, rated_files, yaml_text, expected
):
    assert expected in _train_error(tmp_path, capsys, BASE + yaml_text)


def test_a_config_that_is_not_a_mapping_says_what_it_should_hold(tmp_path, capsys):
    assert _train_error(tmp_path, capsys, "- a\n- b\n") == (
        f"{tmp_path / 'judge.yaml'}: expected a mapping of OrcaConfig fields at the top level"
    )


def test_a_tag_that_would_build_a_python_object_is_refused_and_never_run(tmp_path, capsys):
    marker = tmp_path / "ran"
    text = BASE + f'lr: !!python/object/apply:os.system ["touch {marker}"]\n'
    err = _train_error(tmp_path, capsys, text)
    assert err == (
        f"{tmp_path / 'judge.yaml'}:3: !!python/object/apply:os.system is not allowed: plain "
        "YAML only (mappings, lists, strings, numbers, true/false, null)"
    )
    assert not marker.exists()


def test_a_yaml_syntax_error_names_file_line_and_column(tmp_path, capsys):
    err = _train_error(tmp_path, capsys, BASE + "stages:\n  - name: a\n   max_steps: 3\n")
    assert err.startswith(f"{tmp_path / 'judge.yaml'}:5:")
    assert "YAML syntax error" in err


def test_a_config_that_is_not_utf8_names_the_line_and_byte(tmp_path, capsys):
    err = _train_error(tmp_path, capsys, BASE.encode() + b"# caf\xe9\n")
    assert err == (
        f"{tmp_path / 'judge.yaml'}:3: byte 0xe9 at column 6 is not UTF-8; save the file as "
        "UTF-8 text"
    )


@pytest.mark.parametrize(
    ("config_yaml", "expected"),
    [
        ("score_type: !!python/name:os.system\n", ":1: !!python/name:os.system is not allowed"),
        ("score_type: [beta\n", ":2:1: YAML syntax error"),
        (b"score_type: b\xffta\n", ":1: byte 0xff at column 14 is not UTF-8"),
    ],
)
def test_a_published_checkpoints_config_yaml_is_read_as_plain_yaml(tmp_path, config_yaml, expected):
    (tmp_path / "pub" / "model").mkdir(parents=True)
    path = tmp_path / "pub" / "model" / "config.yaml"
    path.write_bytes(config_yaml if isinstance(config_yaml, bytes) else config_yaml.encode())
    with pytest.raises(CheckpointError) as error:
        read_checkpoint(tmp_path / "pub")
    assert str(error.value).startswith(f"{path}{expected}")
    assert len(str(error.value).splitlines()) == 1


def test_orca_data_that_is_not_utf8_names_file_and_line(tmp_path, capsys):
    path = tmp_path / "items.jsonl"
    good = write_jsonl(tmp_path / "good.jsonl", RATED[:1]).read_bytes()
    path.write_bytes(
        good + b'{"id": "x", "question": "caf\xe9", "reference": "r", "candidate": "c"}\n'
    )
    with pytest.raises(DataError, match=r"items\.jsonl:2: byte 0xe9 at column 29 is not UTF-8"):
        load_items(path)
    argv = ["--checkpoint", str(tmp_path / "none"), "--input", str(path)]
    assert cli_score.main(argv) == 2
    assert capsys.readouterr().err == (
        f"orca score: error: {path}:2: byte 0xe9 at column 29 is not UTF-8; save the file as "
        "UTF-8 text\n"
    )


def test_a_lone_surrogate_in_a_candidate_is_refused_naming_item_and_field(tmp_path, capsys):
    path = tmp_path / "items.jsonl"
    path.write_text(
        '{"id": "q7", "question": "q", "reference": "r", "candidate": "ok \\ud800"}\n',
        encoding="utf-8",
    )
    argv = ["--checkpoint", str(tmp_path / "none"), "--input", str(path)]
    assert cli_score.main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith(
        f"orca score: error: {path}:1: field 'candidate' (id 'q7') has a lone surrogate '\\ud800' "
        "at character 3; expected Unicode text"
    )
    # `metric: orca` scores the run's replies as records: the same check applies.
    record = {"id": "doc-3", "question": "q", "reference": "r", "candidate": "\udc80"}
    with pytest.raises(DataError, match=r"item 0: field 'candidate' \(id 'doc-3'\) has a lone"):
        load_items([record])


def test_a_backbone_whose_weights_are_a_pickle_of_objects_is_refused_saying_why(tmp_path):
    folder = tmp_path / "pickled"
    shutil.copytree(tiny_llama_dir(), folder)
    state = load_file(folder / "model.safetensors")
    (folder / "model.safetensors").unlink()
    torch.save({**state, "trainer_note": Fraction(1, 3)}, folder / "pytorch_model.bin")
    with pytest.raises(BackboneLoadError) as error:
        load_backbone(str(folder), torch.float32)
    message = str(error.value)
    assert message.startswith(
        f"cannot load backbone {str(folder)!r}: {folder / 'pytorch_model.bin'} is a pickle with "
        "more than tensors (it holds fractions.Fraction), and pickles are not loaded for safety"
    )
    assert "model.safetensors" in message and len(message.splitlines()) == 1


@pytest.mark.parametrize(
    ("field", "value", "expected"),
    [
        ("max_steps", "two", "max_steps: expected a whole number >= 1, got 'two'"),
        ("max_steps", True, "max_steps: expected a whole number >= 1, got True"),
        ("seed", -1, "seed: expected a finite number with 0 <= seed, got -1"),
        ("lr", float("inf"), "lr: expected a finite number with 0 < lr, got inf"),
        (
            "clamp_margin",
            0.75,
            "clamp_margin: expected a finite number with 0 <= clamp_margin <= 0.5, got 0.75",
        ),
        ("add_special_tokens", "no", "add_special_tokens: expected true or false, got 'no'"),
        ("dtype", 16, "dtype=16; expected one of auto, float32, bfloat16, float16"),
        ("max_chars", None, None),
        ("max_steps", 1000.0, None),
    ],
)
def test_every_config_field_is_checked_for_type_and_range(field, value, expected):
    owner = OrcaConfig if field in OrcaConfig.field_names() else TrainingArguments
    assert owner.field_problem(field, value) == expected
    assert setting_problem(field, value) == expected
    if expected is None:
        return
    with pytest.raises(ValueError, match=f"^{owner.__name__}.{field}"):
        owner(**{field: value})


def test_a_whole_float_setting_is_kept_as_the_int_it_stands_for():
    assert TrainingArguments(max_steps=1000.0).max_steps == 1000
    assert isinstance(OrcaConfig(lora_alpha=16.0).lora_alpha, int)


def test_a_checkpoint_weights_file_that_pickles_objects_is_refused_saying_why(tmp_path):
    from orca_judge.checkpoint.contents import read_tensors

    path = tmp_path / "model_minus_lm.pt"
    torch.save({"linear.weight": torch.zeros(5, 4), "note": Fraction(1, 3)}, path)
    with pytest.raises(CheckpointError) as error:
        read_tensors(path, "head state dict")
    assert str(error.value).startswith(
        f"head state dict: {path} is a pickle with more than tensors (it holds fractions.Fraction)"
    )
