"""Replies cut off by the token limit: a marker the model class appends, the extractor strips.

lm-eval's `generate_until` returns one string per request, so a model class cannot pass "this
generation stopped at `max_gen_toks`" beside the reply. `aqua-audiolm` (generated length equal
to the limit) and `openai-audio-chat` (`finish_reason == "length"`) append
`TOKEN_LIMIT_SUFFIX` instead. Every extractor strips it before reading the reply; `aqua-rules`
also uses it: a reply that hit the limit without concluding is unparsed `truncated`, where the
text alone could not always tell.
"""

from __future__ import annotations

# Brackets keep the marker from ever reading as an option letter; its words are ours, not a
# model's, so no reply ends in it by chance.
TOKEN_LIMIT_SUFFIX = " [generation hit the token limit]"


def limited_reply(reply: str) -> str:
    """The reply recorded for a generation that stopped at the token limit."""
    return reply if reply.endswith(TOKEN_LIMIT_SUFFIX) else reply + TOKEN_LIMIT_SUFFIX


def split_token_limit(reply: str) -> tuple[str, bool]:
    """The reply without its token-limit marker, and whether it carried one."""
    if isinstance(reply, str) and reply.endswith(TOKEN_LIMIT_SUFFIX):
        return reply[: -len(TOKEN_LIMIT_SUFFIX)], True
    return reply, False
