"""Answer extraction for AQUA-Bench replies: our rules, the authors' rule and MMAU's string match.

Every extractor is a pure function from (reply, options) to an :class:`Extraction`; the
registry names them. See docs/extraction.md for the ordered rules of `aqua-rules` and where
the extractors disagree.
"""

from aqua_tasks.core.extract.authors import extract_official
from aqua_tasks.core.extract.mmau import extract_string_match, string_match
from aqua_tasks.core.extract.registry import (
    DEFAULT_EXTRACTOR,
    EXTRACTOR_ALIASES,
    EXTRACTOR_NAMES,
    EXTRACTOR_VERSIONS,
    extract,
    get_extractor_name,
    rescoring_notice,
)
from aqua_tasks.core.extract.rules import DEFAULT_REJECTIONS, extract_aqua_rules, extract_mmau
from aqua_tasks.core.extract.rules_non_answers import SHORT_REPLY_WORDS
from aqua_tasks.core.extract.verdict import Extraction

__all__ = [
    "DEFAULT_EXTRACTOR",
    "DEFAULT_REJECTIONS",
    "EXTRACTOR_ALIASES",
    "EXTRACTOR_NAMES",
    "EXTRACTOR_VERSIONS",
    "SHORT_REPLY_WORDS",
    "Extraction",
    "extract",
    "extract_aqua_rules",
    "extract_mmau",
    "extract_official",
    "extract_string_match",
    "get_extractor_name",
    "rescoring_notice",
    "string_match",
]
