"""`aqua-audiolm`'s model arguments: typed from lm-eval's strings, bad ones refused by name."""

from __future__ import annotations

from pathlib import Path

import pytest

from aqua_tasks.models.hf_audio_lm_settings import AudioLMSettings, positive_int

DEFAULTS = {
    "pretrained": "org/model",
    "device": "auto",
    "dtype": "auto",
    "batch_size": 1,
    "max_gen_toks": None,
    "trust_remote_code": False,
    "system_prompt": None,
    "revision": None,
    "device_map": None,
    "max_memory": None,
    "reply_cache": "auto",
}


def settings(**changes) -> AudioLMSettings:
    return AudioLMSettings.from_model_args(**{**DEFAULTS, **changes})


def test_model_args_given_as_strings_become_typed_settings():
    s = settings(
        batch_size="8",
        max_gen_toks="16",
        trust_remote_code="yes",
        system_prompt="",
        device_map="auto",
        max_memory="0:20GiB;cpu:64GiB",
        revision="main",
    )
    assert (s.batch_size, s.max_gen_toks, s.trust_remote_code) == (8, 16, True)
    assert s.system_prompt is None and s.max_memory == {0: "20GiB", "cpu": "64GiB"}
    assert s.load_args == {"revision": "main", "trust_remote_code": True}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"pretrained": None}, "needs a model: --model_args pretrained="),
        (
            {"batch_size": "auto"},
            "batch_size=.auto.: aqua-audiolm takes an integer >= 1, not .auto.",
        ),
        ({"max_gen_toks": 0}, "max_gen_toks=0: expected an integer >= 1"),
        ({"max_memory": "cpu:2GiB"}, r"max_memory=\.\.\. needs device_map"),
        ({"trust_remote_code": "maybe"}, "trust_remote_code='maybe': expected true/false"),
    ],
)
def test_a_bad_model_arg_is_refused_naming_it(changes, message):
    with pytest.raises(ValueError, match=message):
        settings(**changes)


def test_reply_cache_is_off_a_folder_or_the_default_one(tmp_path, monkeypatch):
    monkeypatch.setenv("AQUA_CACHE_DIR", str(tmp_path))
    assert settings(reply_cache=" OFF ").journal_folder() is None
    assert settings(reply_cache="0").journal_folder() is None
    default = settings(reply_cache=None).journal_folder()
    assert default == settings(reply_cache="auto").journal_folder()
    assert default is not None and default.is_relative_to(tmp_path)
    assert settings(reply_cache="~/replies").journal_folder() == Path.home() / "replies"
    assert positive_int("n", " 3 ") == 3
