"""`openai-audio-chat` wall time at num_concurrent=1 vs 8 against a local server with latency.

The server (`aqua_tasks.testing.chat_stub`) decodes and checks every clip and answers after a fixed
delay, standing in for a model server's per-request latency; the client's cache is off so
every request is sent. Reports each wall time and the speed-up.

    python benchmarks/bench_api_concurrency.py [--requests 64] [--latency 0.05] [--json]
"""

from __future__ import annotations

import argparse
import json
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf
from lm_eval.api.instance import Instance

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from aqua_tasks.testing.chat_stub import StubConfig, start_stub, stub_url


def build_requests(folder: Path, count: int) -> list[Instance]:
    """`count` requests, each a 2 s clip at 44.1 kHz (resampled and encoded per request)."""
    rng = np.random.default_rng(0)
    requests = []
    for n in range(count):
        path = folder / f"clip{n}.wav"
        sf.write(path, (0.1 * rng.standard_normal(88200)).astype(np.float32), 44100)
        requests.append(
            Instance(
                request_type="generate_until",
                doc={},
                arguments=(
                    f"<audio>\nQuestion {n}: what do you hear?",
                    {"until": [], "max_gen_toks": 64},
                    {"audio": [LazyAudio(path)]},
                ),
                idx=0,
                metadata=("bench", n, 1),
            )
        )
    return requests


def timed_run(url: str, requests: list[Instance], num_concurrent: int) -> float:
    """Seconds for one generate_until over all requests."""
    lm = OpenAIAudioChatLM(base_url=url, model="bench", num_concurrent=num_concurrent, cache=False)
    start = time.perf_counter()
    replies = lm.generate_until(requests, disable_tqdm=True)
    elapsed = time.perf_counter() - start
    if lm.stats.failed or len(replies) != len(requests):
        raise RuntimeError(f"{lm.stats.failed} requests failed at num_concurrent={num_concurrent}")
    return elapsed


def main() -> None:
    """Run both settings and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument("--latency", type=float, default=0.05, help="server delay per request (s)")
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    args = parser.parse_args()
    server, state = start_stub(StubConfig(latency=args.latency))
    try:
        with tempfile.TemporaryDirectory() as folder:
            requests = build_requests(Path(folder), args.requests)
            timed_run(stub_url(server), requests[:4], 4)  # warm-up: imports, first connections
            serial = timed_run(stub_url(server), requests, 1)
            parallel = timed_run(stub_url(server), requests, 8)
    finally:
        server.shutdown()
        server.server_close()
    if state.problems:
        raise RuntimeError(f"the server found audio problems: {state.problems[:3]}")
    figures = {
        "requests": args.requests,
        "latency_s": args.latency,
        "seconds_num_concurrent_1": round(serial, 3),
        "seconds_num_concurrent_8": round(parallel, 3),
        "speedup": round(serial / parallel, 2),
    }
    if args.json:
        print(json.dumps(figures))
        return
    print(
        f"{args.requests} requests, {args.latency * 1000:.0f} ms server latency: "
        f"num_concurrent=1 {serial:.2f} s, num_concurrent=8 {parallel:.2f} s, "
        f"speed-up {serial / parallel:.2f}x"
    )


if __name__ == "__main__":
    main()
