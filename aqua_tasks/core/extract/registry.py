"""Every extractor by name, with its version and the old names recorded runs may carry."""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence

from aqua_tasks.core.extract.authors import extract_official
from aqua_tasks.core.extract.fallback import FALLBACK_EXTRACTOR, FALLBACK_PROMPT_VERSION
from aqua_tasks.core.extract.mmau import extract_string_match
from aqua_tasks.core.extract.rules import DEFAULT_REJECTIONS, extract_aqua_rules
from aqua_tasks.core.extract.verdict import Extraction
from aqua_tasks.core.generation_failure import failure_message
from aqua_tasks.core.generation_limit import split_token_limit

logger = logging.getLogger(__name__)

DEFAULT_EXTRACTOR = "aqua-rules"
# Each extractor reads (reply, options, rejection strings); only ours uses the last, and only
# ours reads the token-limit marker: the others see the reply as the model wrote it.
_EXTRACTORS: dict[str, Callable[[str, Sequence[str], Sequence[str]], Extraction]] = {
    "aqua-rules": extract_aqua_rules,
    "mmau-string-match": lambda reply, options, _: extract_string_match(
        split_token_limit(reply)[0], options
    ),
    "official": lambda reply, options, _: extract_official(split_token_limit(reply)[0], options),
    # The rules' half of the LLM fallback: the task room asks the model for what they leave
    # unparsed, and the reading is applied by `scoring.score_reply` (see fallback.py).
    FALLBACK_EXTRACTOR: extract_aqua_rules,
}
# Names runs recorded before a rename (0.1.0 wrote `mmau`): re-scored by what they now name.
EXTRACTOR_ALIASES: dict[str, str] = {"mmau": "aqua-rules"}
# Every accepted name, canonical names first (argparse choices, metadata validation).
EXTRACTOR_NAMES: tuple[str, ...] = (*_EXTRACTORS, *EXTRACTOR_ALIASES)
_CURRENT_VERSIONS = {"aqua-rules": "3.2", "official": "1.0", "mmau-string-match": "1.0"}
# Keyed by every accepted name, so a manifest can look up whichever name it was given.
EXTRACTOR_VERSIONS: dict[str, str] = _CURRENT_VERSIONS | {
    alias: _CURRENT_VERSIONS[target] for alias, target in EXTRACTOR_ALIASES.items()
}
# The fallback's version names the rules it stands behind and its prompt.
_CURRENT_VERSIONS[FALLBACK_EXTRACTOR] = EXTRACTOR_VERSIONS[FALLBACK_EXTRACTOR] = (
    f"{_CURRENT_VERSIONS['aqua-rules']}+{FALLBACK_PROMPT_VERSION}"
)


def get_extractor_name(name: str) -> str:
    """Return the canonical extractor name (aliases resolved), or raise ValueError."""
    canonical = name.strip().lower() if isinstance(name, str) else name
    if canonical not in EXTRACTOR_NAMES:
        raise ValueError(f"unknown extractor {name!r}; valid choices: {', '.join(EXTRACTOR_NAMES)}")
    if canonical in EXTRACTOR_ALIASES:
        # Not deprecated: runs recorded by 0.1.0 carry it; what users read is `rescoring_notice`.
        logger.debug("extractor name %r is an alias of %r", canonical, EXTRACTOR_ALIASES[canonical])
        return EXTRACTOR_ALIASES[canonical]
    return canonical


def rescoring_notice(name: str, version: str | None) -> str | None:
    """One line saying a run recorded under an old extractor name or version is re-scored."""
    canonical = get_extractor_name(name)
    current = _CURRENT_VERSIONS[canonical]
    if canonical == name.strip().lower() and (version is None or version == current):
        return None
    recorded = f"{name.strip()!r}" + (f" {version}" if version else "")
    return f"recorded extractor {recorded} re-scored with {canonical!r} {current} (current code)"


def extract(
    reply: str,
    options: Sequence[str],
    *,
    extractor: str = DEFAULT_EXTRACTOR,
    rejection_strings: Sequence[str] = DEFAULT_REJECTIONS,
) -> Extraction:
    """Extract the chosen option with the named extractor (see EXTRACTOR_NAMES)."""
    name = get_extractor_name(extractor)
    failure = failure_message(reply)
    if failure is not None:
        # A failed generation is no answer under any rule (see generation_failure.py).
        return Extraction(None, False, f"error: {failure}")
    return _EXTRACTORS[name](reply, options, rejection_strings)
