"""`openai-audio-chat` wall time at num_concurrent=1 vs 8 against a local server with latency.

The server (`ClipServer` below, HTTP/1.1 keep-alive) runs in a process of its own, as a model
server does, so its work does not compete with the client's; it decodes and checks every clip
(a 16 kHz mono WAV) and answers after a fixed delay, standing in for a model server's
per-request latency. The client's reply cache is off so every request is sent. As in an
AQUA run, each clip is asked `--questions-per-clip` questions one after the other (AQUA's
Solvable, AAD, IASD and IAQD: 4); every timed run starts with a fresh client, so the
1-at-a-time baseline and the concurrent run alike make each clip's WAV once (checked), and
`--questions-per-clip 1` measures a clip per request. For each latency it reports the
median wall times of `--repeats` interleaved runs, the speed-up and its ratio to the ideal
(a speed-up equal to num_concurrent).

    python benchmarks/bench_api_concurrency.py [--requests 64] [--latency 0.05 0.2] [--rate 44100]
        [--questions-per-clip 4] [--repeats 3] [--json]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import multiprocessing
import statistics
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from multiprocessing.connection import Connection
from pathlib import Path
from typing import ClassVar

import numpy as np
import soundfile as sf
from lm_eval.api.instance import Instance

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.models.api.client import OpenAIAudioChatLM
from eval_common.cli import number_problem

CONCURRENT = 8
MESSAGE = {"role": "assistant", "content": "The answer is (a)."}
REPLY = json.dumps({"choices": [{"index": 0, "message": MESSAGE, "finish_reason": "stop"}]})


class ClipServer(BaseHTTPRequestHandler):
    """A chat-completions endpoint that checks every clip, waits `latency` s and answers (a)."""

    latency = 0.0
    problems: ClassVar[list[str]] = []  # requests without a 16 kHz mono WAV, and why
    # Keep-alive, as model servers speak; without TCP_NODELAY (which they set) a kept
    # connection waits for the client's delayed ACK, 40 ms, between headers and body.
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True

    def log_message(self, *args: object) -> None:
        pass

    def do_POST(self) -> None:
        body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))))
        parts = body["messages"][-1]["content"]
        clips = [p["input_audio"]["data"] for p in parts if p.get("type") == "input_audio"]
        for clip in clips or [None]:
            self._check(clip)
        time.sleep(self.latency)
        data = REPLY.encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _check(self, clip: str | None) -> None:
        if clip is None:
            self.problems.append("request carries no input_audio part")
            return
        try:
            with sf.SoundFile(io.BytesIO(base64.b64decode(clip))) as audio:
                audio.read()  # decoded, as a model server does
                found = (audio.format, audio.samplerate, audio.channels)
        except (ValueError, RuntimeError) as error:  # soundfile's errors are RuntimeErrors
            self.problems.append(f"clip is not readable audio: {error}")
            return
        if found != ("WAV", 16000, 1):
            self.problems.append(f"clip is (format, Hz, channels) {found}, not ('WAV', 16000, 1)")


def build_requests(
    folder: Path, count: int, rate: int = 44100, per_clip: int = 1
) -> list[Instance]:
    """`count` requests, `per_clip` in a row on each 2 s clip at `rate` Hz (resampled to 16 kHz
    once per clip; at 16000 nothing is resampled, which leaves the client's HTTP path alone)."""
    rng = np.random.default_rng(0)
    requests = []
    for n in range(count):
        path = folder / f"clip{n // per_clip}.wav"
        if n % per_clip == 0:
            sf.write(path, (0.1 * rng.standard_normal(2 * rate)).astype(np.float32), rate)
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


def serve(latency: float, pipe: Connection) -> None:
    """In the server's process: serve until told to stop, then report the audio problems."""
    ClipServer.latency = latency
    server = ThreadingHTTPServer(("127.0.0.1", 0), ClipServer)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    pipe.send(f"http://127.0.0.1:{server.server_address[1]}/v1/chat/completions")
    pipe.recv()
    server.shutdown()
    pipe.send(ClipServer.problems[:3])


def timed_run(url: str, requests: list[Instance], num_concurrent: int) -> float:
    """Seconds for one generate_until over all requests, by a fresh client (no clip made yet)."""
    lm = OpenAIAudioChatLM(base_url=url, model="bench", num_concurrent=num_concurrent, cache=False)
    start = time.perf_counter()
    replies = lm.generate_until(requests, disable_tqdm=True)
    elapsed = time.perf_counter() - start
    if lm.stats.failed or len(replies) != len(requests):
        raise RuntimeError(f"{lm.stats.failed} requests failed at num_concurrent={num_concurrent}")
    clips = len({r.args[2]["audio"][0] for r in requests})
    if lm.wav_cache.misses != clips:
        raise RuntimeError(f"{lm.wav_cache.misses} clips made for {clips} clip files")
    return elapsed


def measure(requests: list[Instance], latency: float, repeats: int) -> dict[str, float]:
    """Median wall times at 1 and CONCURRENT requests in flight, against a fresh server."""
    context = multiprocessing.get_context("spawn")  # a fresh interpreter: no threads forked
    pipe, child_end = context.Pipe()
    server = context.Process(target=serve, args=(latency, child_end))
    server.start()
    try:
        url = pipe.recv()
        timed_run(url, requests[:CONCURRENT], CONCURRENT)  # warm-up: first connections, TLS store
        serial, parallel = [], []
        for _ in range(repeats):  # interleaved: a load change on the box hits both alike
            serial.append(timed_run(url, requests, 1))
            parallel.append(timed_run(url, requests, CONCURRENT))
        pipe.send("stop")
        problems = pipe.recv()
    finally:
        server.join(timeout=30)
        if server.is_alive():
            server.kill()
    if problems:
        raise RuntimeError(f"the server found audio problems: {problems}")
    one, many = statistics.median(serial), statistics.median(parallel)
    return {
        "latency_s": latency,
        "seconds_num_concurrent_1": round(one, 3),
        f"seconds_num_concurrent_{CONCURRENT}": round(many, 3),
        "speedup": round(one / many, 2),
        "ratio_of_ideal": round(one / many / CONCURRENT, 3),
    }


def main() -> None:
    """Measure each latency and print the figures."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=64)
    parser.add_argument(
        "--latency",
        type=float,
        nargs="+",
        default=[0.05, 0.2],
        help="server delay per request (s); several are measured one after the other",
    )
    parser.add_argument("--repeats", type=int, default=3, help="runs per setting (median)")
    parser.add_argument("--rate", type=int, default=44100, help="the clips' sampling rate (Hz)")
    parser.add_argument(
        "--questions-per-clip",
        type=int,
        default=4,
        help="requests in a row on each clip (AQUA: 4; 1 = a clip per request)",
    )
    parser.add_argument("--json", action="store_true", help="print machine-readable JSON")
    args = parser.parse_args()
    counts = (
        ("--requests", args.requests),
        ("--repeats", args.repeats),
        ("--rate", args.rate),
        ("--questions-per-clip", args.questions_per_clip),
    )
    problems = [number_problem(flag, value, minimum=1) for flag, value in counts]
    problems += [number_problem("--latency", value, minimum=0) for value in args.latency]
    for problem in problems:
        if problem:
            parser.error(problem)
    with tempfile.TemporaryDirectory() as folder:
        requests = build_requests(Path(folder), args.requests, args.rate, args.questions_per_clip)
        figures = [measure(requests, latency, args.repeats) for latency in args.latency]
    if args.json:
        header = {
            "requests": args.requests,
            "questions_per_clip": args.questions_per_clip,
            "repeats": args.repeats,
            "rate": args.rate,
        }
        print(json.dumps({**header, "runs": figures}))
        return
    for f in figures:
        print(
            f"{args.requests} requests ({args.rate} Hz clips, "
            f"{args.questions_per_clip} per clip), "
            f"{f['latency_s'] * 1000:.0f} ms server latency "
            f"(median of {args.repeats}): num_concurrent=1 {f['seconds_num_concurrent_1']:.2f} s, "
            f"num_concurrent={CONCURRENT} {f[f'seconds_num_concurrent_{CONCURRENT}']:.2f} s, "
            f"speed-up {f['speedup']:.2f}x = {f['ratio_of_ideal']:.2f} of the ideal "
            f"{CONCURRENT}x"
        )


if __name__ == "__main__":
    main()
