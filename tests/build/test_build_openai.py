"""`aqua build --iaqd openai` against the local chat stand-in: validation, retries, resume."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from shared_data import shared_data, shared_path
from support.chat_stub import StubConfig, start_stub, stub_url

from aqua_tasks.build.api import MMAU_OUTPUT, GeneratorSettings, build_file
from aqua_tasks.build.source import read_source
from aqua_tasks.errors import BuildError
from eval_common.http import RetryPolicy

MMAU = shared_path("mmau") / "mmau-test-mini.json"
LIMIT = 12
MODEL = "stub-writer"
FAST = {"policy": RetryPolicy(max_retries=2, backoff_base=0.0, backoff_max=0.0)}
GOOD = {
    "question": "Based on the given audio, what is the serial number of the recorder?",
    "options": ["SN-1041", "SN-2203", "SN-3377", "SN-4519"],
    "attribute": "serial number",
}
CHILD = """
import sys
from aqua_tasks.build.api import GeneratorSettings, build_file
# One request at a time: the kill then finds exactly the replies the stub sent cached.
settings = GeneratorSettings(
    base_url=sys.argv[1], model="stub-writer", cache_dir=sys.argv[2], concurrency=1
)
build_file(sys.argv[3], sys.argv[4], generator="openai", settings=settings, limit=12)
"""


@pytest.fixture(scope="module")
def items():
    shared_data("mmau")
    return read_source(MMAU)[:LIMIT]


def marker(item) -> str:
    """Text only this item's first request holds (its choices as the prompt lists them)."""
    return f"Original choices: {'; '.join(item.choices)}\n"


@pytest.fixture(autouse=True)
def local_no_proxy(monkeypatch):
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.setenv("no_proxy", "127.0.0.1,localhost")


def writer(items):
    """Replies: item 1 first names "Unanswerable" then is fixed; item 2 always repeats a choice."""
    fixed, stubborn = marker(items[1]), marker(items[2])

    def reply(request) -> str:
        if "rejection_option" in request.text:
            return "```json\n" + json.dumps(GOOD) + "\n```"
        if stubborn in request.text or "original_choice" in request.text:
            return json.dumps({**GOOD, "options": [items[2].choices[0], "X1", "X2", "X3"]})
        if fixed in request.text:
            return json.dumps({**GOOD, "options": ["A1", "A2", "A3", "Unanswerable"]})
        return "Sure! " + json.dumps(GOOD)

    return reply


def settings(server, cache_dir, concurrency: int = 4) -> GeneratorSettings:
    return GeneratorSettings(
        base_url=stub_url(server),
        model=MODEL,
        cache_dir=str(cache_dir),
        concurrency=concurrency,
        extra=FAST,
    )


def most_in_flight(requests, latency: float) -> int:
    """The most requests that arrived within one server latency of each other."""
    times = sorted(r.arrived for r in requests)
    return max(sum(1 for t in times if start <= t < start + latency) for start in times)


def test_validation_failures_are_retried_then_fall_back_and_http_errors_retry(items, tmp_path):
    assert len({marker(i) for i in items}) == LIMIT  # every first request is identifiable
    faults = {marker(items[3]): ["500", "429"]}
    server, state = start_stub(
        StubConfig(require_audio=False, model=MODEL, reply=writer(items), faults=faults)
    )
    try:
        result = build_file(
            MMAU,
            tmp_path / "o",
            generator="openai",
            settings=settings(server, tmp_path / "c"),
            limit=LIMIT,
        )
    finally:
        server.shutdown()
    manifest = result.manifest
    assert manifest["counts"]["built_clips"] == LIMIT
    assert manifest["iaqd_failures"] == {"original_choice": 3, "rejection_option": 1}
    assert manifest["iaqd"] == {
        "attempts": LIMIT + 1 + 2,
        "cached_replies": 0,
        "fallback_to_template": 1,
        "written_by_openai": LIMIT - 1,
        "written_by_template": 1,
    }
    assert state.attempts[next(r.key for r in state.requests if marker(items[3]) in r.text)] == 3
    assert manifest["generator"]["settings"]["model"] == MODEL
    assert "Reply with JSON only" in manifest["generator"]["settings"]["user_prompt"]
    entries = json.loads((tmp_path / "o" / MMAU_OUTPUT).read_text())
    iaqd = [e for e in entries if e["type"] == "IAQD"]
    assert iaqd[1]["options"] == [*GOOD["options"], "Unanswerable"]  # fixed on its retry
    assert iaqd[1]["subtype"] == "serial_number"
    assert iaqd[2]["options"][:4] != GOOD["options"]  # the template stood in
    assert {e["subtype"] for i, e in enumerate(iaqd) if i != 2} == {"serial_number"}
    log = {r["source_id"]: r["reasons"] for r in manifest["items"]}
    assert "iaqd_template_fallback" in log[items[2].id]


def test_interrupted_build_resumes_from_the_cache(items, tmp_path):
    cache, out = tmp_path / "cache", tmp_path / "out"
    server, held = start_stub(
        StubConfig(require_audio=False, model=MODEL, reply=writer(items), hold_after=5)
    )
    env = {**os.environ, "NO_PROXY": "127.0.0.1,localhost", "no_proxy": "127.0.0.1,localhost"}
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, stub_url(server), str(cache), str(MMAU), str(out)],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        while not held.held.wait(timeout=0.2):
            assert child.poll() is None, child.communicate()[1][-2000:]
        child.kill()
        child.communicate(timeout=60)
    finally:
        held.release.set()
        server.shutdown()
    assert not (out / MMAU_OUTPUT).exists()  # nothing half-written
    server, resumed = start_stub(StubConfig(require_audio=False, model=MODEL, reply=writer(items)))
    try:
        result = build_file(
            MMAU, out, generator="openai", settings=settings(server, cache), limit=LIMIT
        )
    finally:
        server.shutdown()
    assert result.manifest["iaqd"]["cached_replies"] == 5
    assert len(resumed.requests) == LIMIT + 1 + 2 - 5  # only what the cache lacked
    server, _ = start_stub(StubConfig(require_audio=False, model=MODEL, reply=writer(items)))
    try:
        build_file(
            MMAU,
            tmp_path / "clean",
            generator="openai",
            settings=settings(server, tmp_path / "c2"),
            limit=LIMIT,
        )
    finally:
        server.shutdown()
    clean = (tmp_path / "clean" / MMAU_OUTPUT).read_bytes()
    assert (out / MMAU_OUTPUT).read_bytes() == clean


def test_a_wrong_model_name_stops_the_build_with_one_line(items, tmp_path):
    server, _ = start_stub(StubConfig(require_audio=False, model="other", reply=writer(items)))
    try:
        with pytest.raises(BuildError, match=r"openai endpoint: HTTP 404: The model"):
            build_file(
                MMAU,
                tmp_path,
                generator="openai",
                settings=settings(server, tmp_path / "c"),
                limit=2,
            )
    finally:
        server.shutdown()


def test_output_is_byte_identical_at_any_concurrency_and_requests_overlap(items, tmp_path):
    latency = 0.08
    built = {}
    for concurrency in (1, 4):
        # Validation failures, retries and HTTP faults as above, with a slow server.
        faults = {marker(items[3]): ["500", "429"]}
        server, state = start_stub(
            StubConfig(
                require_audio=False,
                model=MODEL,
                reply=writer(items),
                faults=faults,
                latency=latency,
            )
        )
        try:
            out = tmp_path / f"o{concurrency}"
            result = build_file(
                MMAU,
                out,
                generator="openai",
                settings=settings(server, tmp_path / f"c{concurrency}", concurrency),
                limit=LIMIT,
            )
        finally:
            server.shutdown()
        assert result.manifest["iaqd"]["fallback_to_template"] == 1
        assert len(state.requests) == LIMIT + 1 + 2 + 2  # items, retries, HTTP faults
        built[concurrency] = (
            (out / MMAU_OUTPUT).read_bytes(),
            (out / f"build-manifest_{Path(MMAU_OUTPUT).stem}.json").read_bytes(),
            most_in_flight(state.requests, latency),
        )
    assert built[4][:2] == built[1][:2]  # the built file and its manifest, byte for byte
    assert built[1][2] == 1 and built[4][2] >= 3


def test_concurrency_below_one_is_refused(items, tmp_path):
    with pytest.raises(BuildError, match=r"concurrency=0: expected 1 or more"):
        build_file(
            MMAU,
            tmp_path,
            generator="openai",
            settings=GeneratorSettings(
                base_url="http://127.0.0.1:9/v1", model=MODEL, concurrency=0
            ),
            limit=1,
        )
