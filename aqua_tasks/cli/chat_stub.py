"""`python -m aqua_tasks.cli.chat_stub`: serve the local audio chat stub until Ctrl-C."""

from __future__ import annotations

import argparse
import threading
from collections.abc import Sequence

from aqua_tasks.testing import chat_stub
from aqua_tasks.testing.chat_stub import StubConfig, start_stub, stub_url

PROG = "python -m aqua_tasks.cli.chat_stub"


def build_parser() -> argparse.ArgumentParser:
    """The chat stub's argument parser."""
    parser = argparse.ArgumentParser(prog=PROG, description=chat_stub.__doc__.split("\n\n")[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added per request")
    parser.add_argument(
        "--judge",
        action="store_true",
        help="stand in for a prompted judge model: serve text-only chats and reply with a JSON "
        "rating (1 + 4 x token-F1 of the candidate answer against the correct answer)",
    )
    parser.add_argument(
        "--fallback",
        action="store_true",
        help="stand in for the LLM fallback's reader (extractor aqua-rules+llm): serve text-only "
        'chats and reply {"answer": ...} naming the one option the reply names (not a model)',
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the stub in the foreground until Ctrl-C."""
    args = build_parser().parse_args(argv)
    config = StubConfig(latency=args.latency)
    if args.judge:
        config = StubConfig(
            latency=args.latency,
            require_audio=False,
            reply=chat_stub.rating_reply(chat_stub.overlap_rating),
        )
    if args.fallback:
        config = StubConfig(
            latency=args.latency,
            require_audio=False,
            reply=lambda request: chat_stub.stand_in_reading(request.text),
        )
    server, state = start_stub(config, args.host, args.port)
    print(f"serving {stub_url(server)} (Ctrl-C stops)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.shutdown()
    print(f"{len(state.requests)} requests, {len(state.problems)} with audio problems")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
