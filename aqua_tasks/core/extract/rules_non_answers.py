"""Replies `aqua-rules` reads as no answer at all: an error, a refusal, or no commitment."""

from __future__ import annotations

import re

from aqua_tasks.core.extract.rules_mentions import Mentions
from aqua_tasks.core.extract.rules_words import WORD
from aqua_tasks.core.extract.verdict import Extraction

# A reply this short that names no option is chatter, or names something else ("Trombone").
SHORT_REPLY_WORDS = 6
# Three kinds of no answer: the endpoint failed, the model declined, or it said nothing.
_ERROR = re.compile(
    r"^\W*(?:error|exception|traceback|fatal|failed|failure)\b|\brate[\s-]?limit(?:ed)?\b"
    r"|\btoo\s+many\s+requests\b|\binternal\s+server\s+error\b|\bservice\s+unavailable\b"
    r"|\bbad\s+gateway\b|\bgateway\s+time-?out\b|\bquota\s+exceeded\b|\bout\s+of\s+memory\b"
    r"|\b(?:request|connection)\s+(?:failed|timed\s+out|refused|reset|error)\b"
    r"|\bstatus\s+code\s+[45]\d\d\b|\bmaximum\s+context\s+length\b"
    r"|\b(?:could\s+not|couldn't|failed\s+to)\s+(?:be\s+)?(?:process|load|decod|read|fetch)\w*"
)
_AUDIO_VERB = r"(?:hear|listen\s+to|process|play|access|open|analy[sz]e|perceive|interpret|review)"
_REFUSAL = re.compile(
    r"\b(?:can't|cannot|can\s+not|could\s+not|couldn't|unable\s+to|not\s+able\s+to"
    r"|(?:don't|do\s+not)\s+have\s+(?:the\s+)?(?:ability|capability|capacity|access)\s+to)\s+"
    rf"(?:(?:directly|actually|currently)\s+)?{_AUDIO_VERB}(?:\s+(?:or|and)\s+{_AUDIO_VERB})?"
    r"\s+(?:(?:the|this|that|your|any|an|a|provided|attached|uploaded|given)\s+){0,2}"
    r"(?:audio|sound\s+files?|recordings?|clips?|attachments?|media|files?)\b"
    r"|\bno\s+audio\s+(?:file\s+)?(?:was|is|has\s+been|were)\s+(?:provided|attached|included"
    r"|given|shared|uploaded)\b|\b(?:can't|cannot)\s+(?:help|assist)\s+with\b"
)
_NO_COMMITMENT = re.compile(
    r"\b(?:(?:do\s+not|don't|dont)\s+know|not\s+sure|unsure|no\s+(?:idea|clue)|idk|dunno"
    r"|(?:can't|cannot)\s+decide|hard\s+to\s+say)\b"
)
_CHATTER_VOCABULARY = (
    "lol lmao rofl haha hahaha hehe hmm hmmm hm um umm uh uhh ok okay k sure thanks thank you "
    "hi hello hey huh what wow cool nice oops meh oh ah yo bye test testing"
)
_CHATTER = frozenset(_CHATTER_VOCABULARY.split())


def hedge_phrase(low: str) -> str | None:
    """The phrase by which a reply says it cannot commit ("hard to say", "not sure"), if any."""
    found = _NO_COMMITMENT.search(low)
    return None if found is None else " ".join(found.group().split())


def refusal_phrase(low: str) -> str | None:
    """The phrase by which a (casefolded) reply says the model could not take in the audio."""
    found = _REFUSAL.search(low)
    return None if found is None else " ".join(found.group().split())


def no_answer(text: str, low: str, committed: Mentions) -> Extraction | None:
    """An error, a capability refusal or a reply without commitment: nothing to score."""
    if not any(m.kind != "rejection" for m in committed.items):
        # A refusal's "so I cannot tell" is about the model, not an answerability judgement.
        for kind, pattern in (("error", _ERROR), ("refusal", _REFUSAL)):
            found = pattern.search(low)
            if found:
                return Extraction(None, False, f"{kind}: {' '.join(found.group().split())!r}")
    if committed.items:
        return None
    found = _NO_COMMITMENT.search(low)
    if found:
        return Extraction(None, False, f"no-commitment: {' '.join(found.group().split())!r}")
    words = [w.lower() for w in WORD.findall(text)]
    if len(words) <= SHORT_REPLY_WORDS and _CHATTER.issuperset(words):
        return Extraction(None, False, f"no-commitment: chatter {text[:40]!r}")
    return None
