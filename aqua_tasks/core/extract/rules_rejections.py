"""How an English reply says no option is right, under `aqua-rules`: rejection by meaning.

A rejection is any of a few meanings, each built from the same parts (the options as a noun
phrase, a count, a verdict word) rather than listed phrase by phrase:

- the question cannot be answered ("cannot be determined", "not enough information");
- nothing among the options fits ("none of them", "no option matches", "neither option");
- every option is wrong ("all five options are wrong", "every one of the choices is off");
- the answer is not in the list ("not among the choices", "not on the list", "the options
  don't include it", "missing from the options", "the right answer isn't there");
- the options belong to another category than the question ("these are colours, not animals").

Replies in the lexicon languages are glossed into these frames first (languages.py). What the
reply says it hears instead ("a harp, which is not among the choices") is found by `heard_instead`.
"""

from __future__ import annotations

import re

# The options as a noun phrase: "the options", "these four choices", "the listed answers".
_OPTION_NOUN = r"(?:options?|choices?|answers?|alternatives?|candidates?|possibilities)"
_COUNT = r"(?:two|three|four|five|six|2|3|4|5|6)"
_DETERMINER = r"(?:the|these|those|your|its|all|both|given|provided|available)"
_OPTIONS = (
    rf"(?:(?:{_DETERMINER}\s+){{0,2}}(?:{_COUNT}\s+)?(?:\w+\s+)?{_OPTION_NOUN}"
    r"|(?:the|this|that|your)\s+(?:\w+\s+)?(?:list|lineup|selection))"
)
_WRONG = (
    r"(?:incorrect|wrong|off|false|invalid|inaccurate|unsuitable|implausible|a\s+miss|mistaken"
    r"|mismatche?d?|excluded|eliminated|ruled\s+out|out\s+of\s+the\s+question)"
)
_FITS = r"(?:fits?|matche?s?|appl(?:y|ies)|works?|corresponds?|is\s+(?:right|correct|valid))"
_UNIVERSAL = r"(?:all|every|each)\s+(?:single\s+)?(?:one\s+)?(?:of\s+)?"
_GIVEN = r"(?:(?:given|listed|offered|provided|here)\s+)?"  # "the answers given lack it"
_NOT_IN = (
    r"(?:on|in|among|amongst|within|part\s+of|one\s+of|any\s+of|included\s+(?:in|among)"
    r"|present\s+(?:in|among)|found\s+(?:in|among)|listed\s+(?:in|among)|offered\s+(?:in|among)"
    r"|given\s+(?:in|among)|represented\s+(?:in|among)|covered\s+by|available\s+(?:in|among))"
)
_ANSWER_NOUN = (
    r"(?:(?:right|correct|true|actual|real|proper)\s+(?:answer|option|choice|one|class"
    r"|instrument|animal|sound|label))"
)
_CATEGORIES = (
    r"(?:colou?rs|foods|dishes|drinks|beverages|professions|occupations|jobs|cities|places"
    r"|locations|vehicles|clothes|clothing|garments|books|emotions|feelings|games|sports|sizes"
    r"|objects|things|items|characters|appearances|adjectives|animals|instruments)"
)
_DOMAINS = (
    r"(?:an?\s+|any\s+)?(?:animals?|(?:musical\s+)?instruments?|(?:vocal\s+)?sounds?|noises?)"
)
_FRAMES = (
    # The question cannot be answered.
    r"\b(?:cannot|can't|can\s+not|could\s+not|couldn't|unable\s+to|impossible\s+to"
    r"|not\s+possible\s+to|no\s+way\s+to|not\s+able\s+to)\s+(?:be\s+)?"
    r"(?:determined?|tell|told|say|said|know|known|identif(?:y|ied)|infer(?:red)?"
    r"|answer(?:ed)?|judged?|decided?|discern(?:ed)?)\b",
    r"\b(?:insufficient|not\s+enough|lacks?|lacking|missing|no)\s+(?:\w+\s+)?"
    r"(?:information|info|details?|evidence|context|cues?|clues?)\b",
    r"\b(?:does\s+not|doesn't|do\s+not|don't)\s+(?:provide|give|contain|convey|include|offer"
    r"|reveal)\s+(?:enough\s+|sufficient\s+|any\s+)?(?:information|info|details?|evidence)\b",
    r"\bunanswerable\b|\bnot\s+answerable\b",
    # Nothing among the options fits.
    r"\bnone\b(?:\s+of\s+(?:the|these|those|them)\b(?:\s+(?:above|options?|choices?|answers?))?)?",
    r"\bno\s+(?:correct|valid|right|suitable|matching|applicable)\s+(?:answer|option|choice)s?\b",
    rf"\b(?:no|zero|0)\s+(?:single\s+)?(?:{_COUNT}\s+)?{_OPTION_NOUN}\s+(?:here\s+|listed\s+)?"
    rf"{_FITS}",
    rf"\bnot\s+(?:a\s+single|one|a)\s+(?:one\s+)?(?:of\s+)?{_OPTIONS}\s+(?:\w+\s+)?{_FITS}",
    rf"\bneither\s+(?:of\s+(?:the|these|those|them)\b(?:\s+{_OPTION_NOUN})?|{_OPTION_NOUN}\b)",
    rf"\b(?:does\s+not|doesn't|do\s+not|don't)\s+(?:match|fit)\s+any\s+(?:of\s+)?"
    rf"(?:the|these|them|{_OPTIONS})\b",
    # Every option is wrong.
    rf"\b{_UNIVERSAL}(?:{_OPTIONS}|them|these|those|(?:the\s+)?{_COUNT})\s+(?:listed\s+|given\s+|here\s+)?"
    rf"(?:is|are|seems?|seem\s+to\s+be|looks?|appears?(?:\s+to\s+be)?)\s+(?:\w+\s+)?{_WRONG}\b",
    rf"\b{_UNIVERSAL}(?:{_OPTIONS}|them|{_COUNT})\s+(?:miss(?:es)?|fail(?:s)?|falls?\s+short)\b",
    rf"\b{_OPTION_NOUN}\s+(?:are|were)\s+all\s+(?:\w+\s+)?{_WRONG}\b",
    # The answer is not in the list.
    r"\bnot\s+(?:listed|offered|included)\b",
    rf"\b(?:not|isn't|aren't|wasn't|never)\s+(?:\w+\s+)?{_NOT_IN}\s+(?:{_OPTIONS}|these|those|them)\b",
    rf"\b(?:not|isn't|aren't)\s+an?\s+(?:listed\s+|given\s+|available\s+)?{_OPTION_NOUN}\b",
    rf"\b(?:absent|missing|excluded|left\s+out|omitted)\s+(?:from|in)\s+{_OPTIONS}\b",
    rf"\b{_ANSWER_NOUN}\s+(?:is|seems\s+to\s+be|appears\s+to\s+be|was)\s+(?:\w+\s+)?"
    r"(?:missing|absent|not\s+(?:there|here|listed|included|offered|given|present|available))\b",
    rf"\b{_ANSWER_NOUN}\s+(?:isn't|wasn't)\s+(?:there|here|listed|included|offered|given"
    r"|present|available)\b",
    rf"\b{_OPTIONS}\s+{_GIVEN}(?:don't|do\s+not|doesn't|does\s+not|fail\s+to|never)\s+"
    r"(?:include|contain|list|cover|offer|have|mention)\b",
    rf"\b{_OPTIONS}\s+{_GIVEN}(?:lacks?|omits?|leaves?\s+out)\b",
    # The options belong to another category than the question.
    r"\b(?:these|they|those|the\s+(?:options|choices|answers))\s+(?:are|'re)\s+(?:all\s+)?"
    rf"(?:just\s+)?(?:\w+\s+)?{_CATEGORIES}\s*,?\s*(?:and\s+)?not\s+{_DOMAINS}\b",
)
REJECTION = re.compile("|".join(_FRAMES))
# What a reply names as heard when it says the options miss it: "it is a harp", "a harp, which
# is not among the choices", "what I hear is a harp".
_HEARD = re.compile(
    r"\b(?:it(?:'s|\s+is)|this\s+is|that(?:'s|\s+is)|sounds\s+like|i\s+hear|what\s+i\s+hear\s+is"
    r"|instead)\s+(?:(?:actually|clearly|really|definitely|obviously|more\s+like)\s+)?"
    r"(?:an?|the)\s+([a-z][a-z-]+)"
    r"|\b(?:an?|the)\s+([a-z][a-z-]+)\s*,?\s+(?:which|that|and\s+(?:that|it))\s+"
    r"(?:is\s+not|isn't|is\s+missing|is\s+absent)"
)


def heard_instead(low: str) -> list[re.Match[str]]:
    """Each place a (casefolded) reply names what it hears ("it is a harp", "a harp, which")."""
    return list(_HEARD.finditer(low))


def heard_word(found: re.Match[str]) -> tuple[int, int]:
    """The span of the heard word in a match of `heard_instead`."""
    group = 1 if found.group(1) else 2
    return found.start(group), found.end(group)
