"""An HTTP 200 whose message has no text is a failed attempt: retried, never cached, listed."""

from __future__ import annotations

from support.chat_stub import StubConfig, start_stub, stub_url

from aqua_tasks.core.extract import extract
from aqua_tasks.core.generation_failure import failure_message
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from aqua_tasks.task.definition import doc_to_text


def model(server, tmp_path) -> OpenAIAudioChatLM:
    return OpenAIAudioChatLM(
        base_url=stub_url(server),
        model="m",
        cache_dir=str(tmp_path),
        max_retries=2,
        backoff_base=0.01,
        backoff_max=0.05,
    )


def test_a_reply_without_content_is_retried_and_the_real_reply_cached(tmp_path, requests):
    first = doc_to_text(requests[0].doc).removeprefix("<audio>\n")
    server, stub = start_stub(StubConfig(faults={first: ["no-content"]}))
    try:
        lm = model(server, tmp_path)
        replies = lm.generate_until(requests, disable_tqdm=True)
        again = model(server, tmp_path)
        assert again.generate_until(requests, disable_tqdm=True) == replies
    finally:
        server.shutdown()
    assert replies == ["The answer is (a).", "The answer is (a)."]
    assert lm.stats.retries == 1 and lm.stats.retries_by_reason["no content"] == 1
    assert again.stats.from_cache == 2 and stub.attempts and len(stub.requests) == 3


def test_a_reply_that_never_has_content_fails_the_item_and_is_not_cached(tmp_path, requests):
    first = doc_to_text(requests[0].doc).removeprefix("<audio>\n")
    server, stub = start_stub(StubConfig(faults={first: ["no-content"] * 5}))
    try:
        lm = model(server, tmp_path)
        replies = lm.generate_until(requests, disable_tqdm=True)
        again = model(server, tmp_path)
        rerun = again.generate_until(requests, disable_tqdm=True)
    finally:
        server.shutdown()
    assert "reply has no text" in (failure_message(replies[0]) or "")
    assert "(3 attempts)" in replies[0]
    verdict = extract(replies[0], requests[0].doc["options"])
    assert (verdict.choice, verdict.parsed, verdict.reason.split(":")[0]) == (None, False, "error")
    # Not cached: the rerun asks again for the failed item only (and the server, whose five
    # bad replies are spent after two more attempts, now answers it).
    assert again.stats.from_cache == 1 and rerun[0] == "The answer is (a)."
    assert len(stub.requests) == 3 + 1 + 3
