"""Replies `aqua-rules` reads as no answer at all: an error, a refusal, or no commitment."""

from __future__ import annotations

import re

from aqua_tasks.core.extract.rules_mentions import Mentions
from aqua_tasks.core.extract.rules_words import NO_REJECTION, WORD
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
_AUDIO = r"(?:audio|sound\s+files?|recordings?|clips?|attachments?|media|files?)"
_THE = r"(?:(?:the|this|that|your|any|an|a|provided|attached|uploaded|given|actual)\s+){0,2}"
# A model that could not take in the audio: it lacks the means, the audio never reached it, or
# it says it cannot hear. Such a reply never judged the audio, so its "cannot tell" is no answer.
_REFUSALS = (
    r"\b(?:can't|cannot|can\s+not|could\s+not|couldn't|unable\s+to|not\s+able\s+to"
    r"|(?:don't|do\s+not)\s+have\s+(?:the\s+)?(?:ability|capability|capacity|access)\s+to)\s+"
    rf"(?:(?:directly|actually|currently)\s+)?{_AUDIO_VERB}(?:\s+(?:or|and)\s+{_AUDIO_VERB})?"
    rf"\s+{_THE}{_AUDIO}\b",
    r"\b(?:can't|cannot)\s+(?:help|assist)\s+with\b",
    # No access: "I don't have access to the audio", "I did not receive any recording".
    r"\b(?:don't|do\s+not|didn't|did\s+not|doesn't|does\s+not|haven't|have\s+not|never)\s+"
    r"(?:have\s+|get\s+|got\s+|been\s+given\s+)?(?:any\s+)?(?:access\s+to|received?|get"
    rf"|see|hear)\s+{_THE}{_AUDIO}\b",
    rf"\b(?:no|without)\s+(?:direct\s+)?access\s+to\s+{_THE}{_AUDIO}\b",
    rf"\b(?:(?:was|were)\s+(?:not|never)|wasn't|weren't)\s+(?:given|sent|provided\s+with)\s+"
    rf"{_THE}{_AUDIO}\b",
    # Not attached: "no audio was provided", "the recording is not attached", "didn't come through".
    rf"\bno\s+{_AUDIO}\s+(?:file\s+|clip\s+)?(?:was|is|has\s+been|were|have\s+been|came"
    r"|seems\s+to\s+(?:be|have\s+been)|appears\s+to\s+(?:be|have\s+been))\s+(?:\w+\s+)?"
    r"(?:provided|attached|included|given|shared|uploaded|received|sent|present|through|with)\b",
    rf"\bthere(?:\s+is|\s+was|'s)\s+no\s+{_AUDIO}\s+(?:file\s+|clip\s+)?(?:attached|included"
    r"|provided|here|present|in\s+(?:the|this|your)\s+(?:message|prompt|request|conversation))\b",
    rf"\b{_AUDIO}\s+(?:file\s+|clip\s+)?(?:is|was|seems|appears)\s+(?:to\s+be\s+)?"
    r"(?:not\s+(?:attached|included|provided|available|present)|missing|absent|empty)\b"
    r"(?!\s+(?:\w+\s+)?(?:information|cues?|details?|clues?|evidence|context))",
    rf"\b{_AUDIO}\s+(?:file\s+|clip\s+)?(?:did\s+not|didn't|does\s+not|doesn't|failed\s+to"
    r"|never)\s+(?:come\s+through|load|arrive|attach|upload|reach\s+me)\b",
    r"\b(?:can\s+)?only\s+(?:see|read|process|receive|received|handle)\s+(?:the\s+)?"
    r"(?:text|written\s+words)\b|\btext[-\s](?:only|based)\s+(?:ai|model|language\s+model"
    r"|assistant|interface|system)\b",
    # Cannot hear at all: "I cannot hear, so ...", "without ears", "no ability to listen".
    r"\b(?:can't|cannot|can\s+not|unable\s+to|not\s+able\s+to|no\s+way\s+(?:for\s+me\s+)?to)"
    r"\s+(?:hear|listen|perceive)\b(?:\s+(?:sounds?|anything|audio|at\s+all))?"
    r"(?=\s*(?:[.,;:!)]|$)|\s+(?:so|and|because|as|since|but)\b)",
    r"\b(?:without|(?:have|has|having)\s+no|lack|lacking|(?:don't|do\s+not)\s+have)\s+(?:any\s+)?"
    r"(?:ears|hearing|(?:the\s+)?(?:ability|capability|capacity|means)\s+to\s+(?:hear|listen))\b",
)
_REFUSAL = re.compile("|".join(_REFUSALS))
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


def no_answer(text: str, low: str, committed: Mentions, rejection: int) -> Extraction | None:
    """An error, a capability refusal or a reply without commitment: nothing to score.

    `rejection`: the item's rejection option, which a refusal's "(e) None of the above" names
    without judging the audio.
    """
    if not any(m.idxs - {rejection, NO_REJECTION} for m in committed.items):
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
