"""Bad model arguments of every model class: one ModelArgumentError line naming argument, value
and what is allowed, raised before anything is loaded or sent; a Hub id still passes through."""

from __future__ import annotations

import json

import pytest
import torch

from aqua_tasks.errors import ModelArgumentError
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from aqua_tasks.models.baselines import FirstOptionLM, RandomOptionLM, ReplayLM
from aqua_tasks.models.hf_audio_lm import AudioLM
from aqua_tasks.models.model_args import checked_pretrained

URL = "http://localhost:9/v1/chat/completions"
# What lm-eval's CLI sends every model beside --model_args.
HARNESS = {"batch_size": 1, "max_batch_size": None, "device": None}


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (
            {"pretrained": "org/model", "batch_size": "auto"},
            "batch_size='auto': aqua-audiolm takes an integer >= 1, not 'auto' (a batch that "
            "runs out of memory is halved",
        ),
        ({"pretrained": "org/model", "batch_size": 0}, "batch_size=0: expected an integer >= 1"),
        (
            {"pretrained": "org/model", "colour": "red"},
            "aqua-audiolm: unknown model argument(s) colour; accepted: batch_size, device, "
            "device_map, dtype,",
        ),
        (
            {"pretrained": "/no/such/checkpoint"},
            "pretrained='/no/such/checkpoint': no such folder; give an existing model folder "
            "(with config.json) or a Hub id such as Qwen/Qwen2-Audio-7B-Instruct",
        ),
        (
            {"pretrained": "./models/qwen2-audio"},
            "pretrained='./models/qwen2-audio': no such folder",
        ),
        ({"pretrained": "org/model", "dtype": "fp8"}, "dtype='fp8': expected one of auto,"),
    ],
)
def test_audiolm_bad_model_args_are_one_line_before_anything_loads(args, line):
    with pytest.raises(ModelArgumentError) as caught:
        AudioLM.check_model_args(args, HARNESS)
    assert str(caught.value).startswith(line) and "\n" not in str(caught.value)
    with pytest.raises(ModelArgumentError, match="^" + line[:20].replace("(", r"\(")):
        AudioLM.create_from_arg_obj(args, HARNESS)  # the real constructor says the same


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_audiolm_device_cuda_without_a_gpu_says_what_this_machine_has():
    with pytest.raises(ModelArgumentError) as caught:
        AudioLM.check_model_args({"pretrained": "org/model", "device": "cuda"}, HARNESS)
    assert str(caught.value) == (
        "device='cuda', but torch sees no CUDA device here; use device=auto (the best device "
        "here) or device=cpu"
    )
    # lm-eval's own --device default (cuda:0) still falls back to the best device here.
    AudioLM.check_model_args({"pretrained": "org/model"}, {**HARNESS, "device": "cuda:0"})


def test_a_hub_id_and_an_existing_folder_pass_through_to_transformers(tmp_path):
    assert checked_pretrained("Qwen/Qwen2-Audio-7B-Instruct") == "Qwen/Qwen2-Audio-7B-Instruct"
    assert checked_pretrained("gpt2") == "gpt2"
    assert checked_pretrained(str(tmp_path)) == str(tmp_path)
    (tmp_path / "weights.bin").write_bytes(b"")
    with pytest.raises(ModelArgumentError, match=r"weights\.bin' is a file; give the model"):
        checked_pretrained(str(tmp_path / "weights.bin"))


@pytest.mark.parametrize(
    ("changes", "line"),
    [
        ({"num_concurrent": 0}, "num_concurrent=0: expected an integer >= 1"),
        ({"timeout": 0}, "timeout=0: expected a finite number with 0.0 < timeout < 86400, got 0.0"),
        (
            {"timeout": "inf"},
            "timeout='inf': expected a finite number with 0.0 < timeout < 86400, got inf",
        ),
        (
            {"timeout": "1e308"},
            "timeout='1e308': expected a finite number with 0.0 < timeout < 86400, got 1e+308",
        ),
        ({"temperature": "nan"}, "temperature='nan': expected a finite number with 0.0 <="),
        ({"seed": "abc"}, "seed='abc': expected an integer >= 0"),
        ({"max_retries": 1.5}, "max_retries=1.5: expected an integer >= 0"),
        ({"cache": "maybe"}, "cache='maybe': expected true/false"),
        (
            {"num_concurent": 4},
            "openai-audio-chat: unknown model argument(s) num_concurent; accepted: api_key_env,",
        ),
    ],
)
def test_api_model_bad_args_are_one_line_and_nothing_is_sent(changes, line, tmp_path):
    args = {"base_url": URL, "model": "m", "cache_dir": str(tmp_path), **changes}
    with pytest.raises(ModelArgumentError) as caught:
        OpenAIAudioChatLM.check_model_args(args, HARNESS)
    assert str(caught.value).startswith(line)
    assert not any(tmp_path.iterdir())  # the check opens no reply cache


def test_baseline_args_name_the_model_and_what_it_takes():
    with pytest.raises(ModelArgumentError, match=r"^seed='abc': expected an integer >= 0$"):
        RandomOptionLM.check_model_args({"seed": "abc"}, HARNESS)
    with pytest.raises(
        ModelArgumentError, match=r"^aqua-first-option: unknown model argument\(s\) seed; accepted"
    ):
        FirstOptionLM.check_model_args({"seed": 1}, HARNESS)
    # lm-eval's --batch_size auto means nothing to a baseline and is not refused.
    FirstOptionLM.check_model_args({}, {**HARNESS, "batch_size": "auto"})


def test_replay_of_a_run_with_fewer_items_names_the_missing_ones_and_what_to_do(
    requests, released_dir, tmp_path
):
    (first,) = json.loads((released_dir / "AQUA-Bench-Animal-Sounds-Track.json").read_text())[:1]
    saved = tmp_path / "AQUA-Bench-Animal-Sounds-Track.json"
    saved.write_text(json.dumps([{**first, "response": "(a)"}]))
    model = ReplayLM(path=str(saved))
    with pytest.raises(ModelArgumentError) as caught:
        model.generate_until(requests, disable_tqdm=True)
    missing_id = requests[1].doc["id"]
    assert str(caught.value) == (
        f"aqua-replay: path={str(saved)!r} has no saved reply for 1 of the 2 requested items "
        f"(e.g. aqua_animal id {missing_id}; saved items per task: aqua_animal: 1); replay only "
        "what the saved run answered (the same --tasks and --limit) or give a run that holds "
        "every requested item"
    )
    assert model.generate_until(requests[:1], disable_tqdm=True) == ["(a)"]


def test_both_model_classes_build_from_a_model_args_string_through_one_implementation():
    built = AudioLM.create_from_arg_string.__func__
    assert built is OpenAIAudioChatLM.create_from_arg_string.__func__
    # lm-eval's base class would call the constructor with the CLI's settings added, and skip
    # create_from_arg_obj: its check of unknown names and its merge of the CLI's batch_size.
    api = OpenAIAudioChatLM.create_from_arg_string(
        f"base_url={URL},model=m,cache=false", {**HARNESS, "batch_size": 4}
    )
    assert (api.model, api.base_url, api.cache) == ("m", URL, None)
    with pytest.raises(ModelArgumentError, match=r"unknown model argument\(s\) bogus"):
        OpenAIAudioChatLM.create_from_arg_string(f"base_url={URL},model=m,bogus=1", HARNESS)
    with pytest.raises(ModelArgumentError, match="cache='perhaps': expected true/false"):
        OpenAIAudioChatLM.create_from_arg_string(f"base_url={URL},model=m,cache=perhaps")


def test_models_that_need_audio_refuse_a_text_only_run_in_one_line_naming_the_fix():
    from aqua_tasks.core.settings_place import LMMS_EVAL_PLACE, settings_given_in
    from aqua_tasks.models.audio_prompts import refuse_text_only_run

    for cls, name, instead in (
        (AudioLM, "aqua-audiolm", "an `hf` model"),
        (OpenAIAudioChatLM, "openai-audio-chat", "lm-eval's local-chat-completions"),
    ):
        with pytest.raises(ModelArgumentError) as refused:
            refuse_text_only_run(cls, {"data_dir": "d", "audio": "false"})
        line = str(refused.value)
        assert "\n" not in line and line.startswith(f"{name} needs audio, but --metadata sets")
        assert line.endswith(
            f'drop "audio": false to send the clips, or run text-only with {instead}'
        )
        refuse_text_only_run(cls, {"data_dir": "d"})  # audio runs pass
        refuse_text_only_run(cls, {"data_dir": "d", "audio": True})
    with (
        settings_given_in(LMMS_EVAL_PLACE),
        pytest.raises(ModelArgumentError, match="AQUA_METADATA"),
    ):
        refuse_text_only_run(AudioLM, {"audio": False})
    # Baselines answer from the doc, never from the audio: a text-only run is theirs to make.
    refuse_text_only_run(FirstOptionLM, {"audio": False})
