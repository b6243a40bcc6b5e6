"""The WAV bytes `openai-audio-chat` sends: made once per clip file, bounded, never stale."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from lm_eval.api.instance import Instance
from support.chat_stub import StubConfig, start_stub, stub_url

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.errors import AudioFileError
from aqua_tasks.models.api import wav_cache as wav_cache_module
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from aqua_tasks.models.api.payload import wav_bytes
from aqua_tasks.models.api.wav_cache import DEFAULT_MAX_BYTES, WavCache, WavPrefetch
from eval_common.reply_cache import ReplyCache


def write_clip(path: Path, seed: int, seconds: float = 0.5, rate: int = 44100) -> LazyAudio:
    wave = 0.1 * np.random.default_rng(seed).standard_normal(int(seconds * rate))
    sf.write(path, wave.astype(np.float32), rate)
    return LazyAudio(path)


def test_a_clip_file_is_made_once_into_the_same_bytes_wav_bytes_gives(tmp_path):
    clip = write_clip(tmp_path / "a.wav", 0)
    cache = WavCache()

    first, second = cache.wav(clip), cache.wav(LazyAudio(tmp_path / "a.wav"))

    assert first == second == wav_bytes(clip)
    assert (cache.misses, cache.hits, len(cache)) == (1, 1, 1)
    assert cache.size_bytes == len(first)
    assert cache.wav(clip, rate=8000) == wav_bytes(clip, 8000)  # another rate, another entry
    assert cache.misses == 2


def test_the_cache_is_bounded_by_bytes_dropping_the_least_recently_used(tmp_path):
    clips = [write_clip(tmp_path / f"{n}.wav", n) for n in range(3)]
    size = len(wav_bytes(clips[0]))
    cache = WavCache(max_bytes=2 * size)

    cache.wav(clips[0])
    cache.wav(clips[1])
    cache.wav(clips[0])  # now the most recently used
    cache.wav(clips[2])  # evicts clips[1]

    assert len(cache) == 2 and cache.size_bytes == 2 * size <= cache.max_bytes
    assert cache.wav(clips[0]) == wav_bytes(clips[0])
    misses = cache.misses
    cache.wav(clips[1])
    assert cache.misses == misses + 1

    small = WavCache(max_bytes=size - 1)  # a clip larger than the bound is never kept
    assert small.wav(clips[0]) == wav_bytes(clips[0]) and len(small) == 0
    assert DEFAULT_MAX_BYTES == 64 * 1024 * 1024
    with pytest.raises(ValueError, match="max_bytes must be a non-negative integer"):
        WavCache(max_bytes=-1)


def test_a_file_rewritten_in_place_is_made_afresh_even_with_its_old_size_and_mtime(tmp_path):
    path = tmp_path / "clip.wav"
    clip = write_clip(path, 0)
    cache = WavCache()
    old = cache.wav(clip)
    stat = os.stat(path)

    write_clip(path, 1)  # same length, so the same size
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns))
    assert os.stat(path).st_size == stat.st_size

    new = cache.wav(clip)
    assert new != old and new == wav_bytes(clip)
    assert cache.misses == 2


def test_arrays_and_unreadable_files_are_not_kept_and_fail_as_before(tmp_path):
    cache = WavCache()
    array = {"array": np.zeros(1600, dtype=np.float32), "sampling_rate": 16000}
    assert cache.wav(array) == wav_bytes(array) and len(cache) == 0

    missing = LazyAudio(tmp_path / "missing.wav")
    with pytest.raises(AudioFileError) as ours:
        cache.wav(missing)
    with pytest.raises(AudioFileError) as before:
        wav_bytes(missing)
    assert str(ours.value) == str(before.value)

    broken = tmp_path / "broken.wav"
    broken.write_bytes(b"not a wav file")
    for _ in range(2):  # a failure is not kept: each call tries the file again
        with pytest.raises(AudioFileError, match=r"broken\.wav"):
            cache.wav(LazyAudio(broken))
    assert cache.misses == 2 and len(cache) == 0


def test_a_file_that_changes_while_it_is_read_is_sent_as_read_but_not_kept(tmp_path, monkeypatch):
    path = tmp_path / "clip.wav"
    clip = write_clip(path, 0)
    read_first = wav_bytes(clip)

    def read_then_change(audio, rate):
        wav = wav_bytes(audio, rate)
        write_clip(path, 1, seconds=0.6)
        return wav

    monkeypatch.setattr(wav_cache_module, "wav_bytes", read_then_change)
    cache = WavCache()
    assert cache.wav(clip) == read_first
    assert len(cache) == 0


def test_requests_asking_for_a_clip_being_made_wait_for_it_instead_of_making_it(tmp_path):
    clip = write_clip(tmp_path / "a.wav", 0, seconds=2.0)
    cache = WavCache()
    start = threading.Barrier(8)
    got: list[bytes] = []

    def ask() -> None:
        start.wait()
        got.append(cache.wav(clip))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert got == [wav_bytes(clip)] * 8
    assert (cache.misses, cache.hits) == (1, 7)


def test_prefetch_makes_clips_only_as_far_ahead_as_its_lookahead(tmp_path):
    clips = [[write_clip(tmp_path / f"{n}.wav", n, seconds=0.1)] for n in range(5)]
    cache = WavCache()
    prefetch = WavPrefetch(cache, clips, lookahead=2)
    prefetch.start()
    try:
        deadline = time.monotonic() + 10
        while cache.misses < 2 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep(0.1)
        assert cache.misses == 2  # waits for a worker to start a request
        prefetch.started()
        while cache.misses < 3 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert cache.misses == 3
    finally:
        prefetch.close()
    assert cache.wav(clips[2][0]) == wav_bytes(clips[2][0]) and cache.hits == 1


def requests_on(clips: list[LazyAudio], per_clip: int) -> list[Instance]:
    return [
        Instance(
            request_type="generate_until",
            doc={},
            arguments=(f"<audio>\nQuestion {q} on clip {n}?", {"until": []}, {"audio": [clip]}),
            idx=0,
            metadata=("aqua_animal", per_clip * n + q, 1),
        )
        for n, clip in enumerate(clips)
        for q in range(per_clip)
    ]


@pytest.mark.parametrize("num_concurrent", [1, 4])
def test_a_run_sends_and_caches_the_same_bytes_as_without_the_wav_cache(tmp_path, num_concurrent):
    clips = [write_clip(tmp_path / f"{n}.wav", n) for n in range(3)]
    requests = requests_on(clips, per_clip=4)
    server, stub = start_stub(StubConfig(latency=0.01, reply=lambda r: f"heard {r.text}"))
    runs = {}
    try:
        for name, max_bytes in (("kept", DEFAULT_MAX_BYTES), ("made per request", 0)):
            lm = OpenAIAudioChatLM(
                base_url=stub_url(server),
                model="m",
                num_concurrent=num_concurrent,
                cache_dir=str(tmp_path / name),
            )
            lm.wav_cache = WavCache(max_bytes)
            replies = lm.generate_until(requests, disable_tqdm=True)
            keys = sorted(ReplyCache(lm.cache.path)._entries)
            runs[name] = (replies, keys, lm.wav_cache.misses)
    finally:
        server.shutdown()
    assert not stub.problems
    sent = [r.key for r in stub.requests]
    assert sorted(sent[:12]) == sorted(sent[12:])  # the server got the same bytes both times
    assert runs["kept"][:2] == runs["made per request"][:2]
    assert runs["kept"][2] == 3  # one per clip file
    # Without room nothing is kept; only requests in flight together share a clip being made.
    made = runs["made per request"][2]
    assert made == 12 if num_concurrent == 1 else 3 <= made <= 12
