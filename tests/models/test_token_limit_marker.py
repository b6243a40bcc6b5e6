"""Both model classes mark a reply cut by the token limit, and `aqua-rules` reads the mark."""

from __future__ import annotations

from lm_eval.api.instance import Instance
from support.chat_stub import StubConfig, start_stub, stub_url
from support.tiny_audio_lm import build_tiny_audio_lm

from aqua_tasks.core.extract import extract
from aqua_tasks.core.generation_limit import TOKEN_LIMIT_SUFFIX, split_token_limit
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from aqua_tasks.models.hf_audio_lm import AudioLM
from aqua_tasks.task.definition import doc_to_text

GEN_KWARGS = {"until": [], "max_gen_toks": 64, "do_sample": False, "temperature": 0.0}
LEANING = "Let me analyze the audio. The bark is sharp, like a dog's, and the pitch"


def test_api_reply_with_finish_reason_length_is_marked_and_scored_truncated(tmp_path, requests):
    # Item 0 stops at max_tokens, item 1 finishes: the stub says so in finish_reason.
    first = doc_to_text(requests[0].doc).removeprefix("<audio>\n")
    config = StubConfig(
        reply=lambda r: LEANING if r.text == first else "(c) Dog",
        finish_reason=lambda r: "length" if r.text == first else "stop",
    )
    server, _ = start_stub(config)
    try:
        lm = OpenAIAudioChatLM(base_url=stub_url(server), model="m", cache_dir=str(tmp_path))
        replies = lm.generate_until(requests, disable_tqdm=True)
        # The cached reply keeps its marker, so a resumed run scores it the same.
        again = OpenAIAudioChatLM(base_url=stub_url(server), model="m", cache_dir=str(tmp_path))
        assert again.generate_until(requests, disable_tqdm=True) == replies
        assert again.stats.from_cache == 2
    finally:
        server.shutdown()
    assert replies == [LEANING + TOKEN_LIMIT_SUFFIX, "(c) Dog"]
    options = requests[0].doc["options"]
    assert list(options) == ["Rooster", "Crow", "Dog", "Pig", "Sheep"]
    cut = extract(replies[0], options)
    assert (cut.choice, cut.parsed) == (None, False)
    assert cut.reason == "truncated: hit the token limit while reasoning"
    # Without the marker this short lean reads as Dog: only the model class could tell.
    assert extract(LEANING, options).letter == "C"
    assert extract(replies[1], requests[1].doc["options"]).letter == "C"


def test_hf_reply_that_reaches_max_gen_toks_is_marked(tmp_path_factory, requests):
    tiny = build_tiny_audio_lm(tmp_path_factory.mktemp("tiny_limit"))
    lm = AudioLM(pretrained=str(tiny), device="cpu", max_gen_toks=3, reply_cache="off")
    replies = lm.generate_until(requests, disable_tqdm=True)
    # A random tiny model never ends on its own within three tokens.
    texts = [split_token_limit(r) for r in replies]
    assert all(limited for _, limited in texts)
    assert all(len(lm.tokenizer(text)["input_ids"]) <= 3 for text, _ in texts)
    # Cut by a stop string instead: not the token limit, so not marked.
    stop = next(c for c in texts[0][0][1:] if not c.isspace())
    stopped = Instance(
        request_type="generate_until",
        doc=requests[0].doc,
        arguments=(requests[0].args[0], {**GEN_KWARGS, "until": [stop]}, requests[0].args[2]),
        idx=0,
        metadata=("aqua_animal", 0, 1),
    )
    (cut,) = lm.generate_until([stopped], disable_tqdm=True)
    assert not split_token_limit(cut)[1] and cut == texts[0][0][: texts[0][0].index(stop, 1)]
