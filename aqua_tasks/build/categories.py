"""The IASD category bank (package data) and the overlap rule that picks a category per item."""

from __future__ import annotations

import json
import random
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cached_property, lru_cache
from importlib import resources
from typing import Any

from aqua_tasks.build.text import option_key, terms

BANK_FILE = "categories.json"
BANK_FORMAT = 1


@dataclass(frozen=True)
class Category:
    """One pool of options of a kind (architects, colours, …) and the words that signal it."""

    name: str
    options: tuple[str, ...]
    keywords: tuple[str, ...]

    @cached_property
    def terms(self) -> frozenset[str]:
        """Every content term of the category: its name, keywords and options."""
        return terms((self.name.replace("_", " "), *self.keywords, *self.options))


@dataclass(frozen=True)
class IaqdTemplate:
    """A question about something audio cannot tell, with the pool its options come from."""

    attribute: str
    question: str  # may hold `{noun}`: what the clip is (sound, music, speech, audio)
    pool: str


@dataclass(frozen=True)
class Bank:
    """The IASD categories and the template IAQD questions with their option pools."""

    categories: dict[str, Category]
    pools: dict[str, tuple[str, ...]]
    templates: tuple[IaqdTemplate, ...]


def _strings(value: object, where: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise ValueError(f"{where}: expected a list of non-empty strings")
    return tuple(value)


def parse_bank(raw: Mapping[str, Any], source: str = BANK_FILE) -> Bank:
    """Validate a category bank; errors name the category or template and the field."""
    if raw.get("format") != BANK_FORMAT:
        raise ValueError(f"{source}: field 'format' is {raw.get('format')!r}, expected 1")
    categories = {}
    for name, entry in dict(raw.get("categories") or {}).items():
        options = _strings(entry.get("options"), f"{source}: category {name!r} field 'options'")
        if len({option_key(o) for o in options}) != len(options) or len(options) < 4:
            raise ValueError(f"{source}: category {name!r}: expected at least 4 distinct options")
        keywords = _strings(entry.get("keywords", []), f"{source}: category {name!r} 'keywords'")
        categories[name] = Category(name, options, keywords)
    pools = {
        name: _strings(values, f"{source}: iaqd_pools {name!r}")
        for name, values in dict(raw.get("iaqd_pools") or {}).items()
    }
    templates = []
    for i, entry in enumerate(raw.get("iaqd_templates") or []):
        template = IaqdTemplate(str(entry["attribute"]), str(entry["question"]), str(entry["pool"]))
        if template.pool not in pools and template.pool not in categories:
            raise ValueError(f"{source}: iaqd_templates[{i}] pool {template.pool!r} is not defined")
        templates.append(template)
    if not categories or not templates:
        raise ValueError(f"{source}: expected categories and iaqd_templates")
    return Bank(categories, pools, tuple(templates))


@lru_cache(maxsize=1)
def default_bank() -> Bank:
    """The bank shipped with the package."""
    text = resources.files("aqua_tasks.build").joinpath(BANK_FILE).read_text(encoding="utf-8")
    return parse_bank(json.loads(text))


def pool(bank: Bank, name: str) -> tuple[str, ...]:
    """The options of an IAQD pool (an `iaqd_pools` entry or a category's options)."""
    return bank.pools[name] if name in bank.pools else bank.categories[name].options


def eligible_categories(bank: Bank, item_texts: Iterable[str]) -> list[Category]:
    """Categories none of whose terms occurs in the item's question, choices or answer."""
    item_terms = terms(item_texts)
    return [c for c in bank.categories.values() if not (c.terms & item_terms)]


def choose_iasd(
    bank: Bank, item_texts: Iterable[str], count: int, rng: random.Random
) -> tuple[Category, list[str]] | None:
    """A seeded pick of an eligible category and `count` of its options; None if none fits."""
    candidates = [c for c in eligible_categories(bank, item_texts) if len(c.options) >= count]
    if not candidates:
        return None
    category = rng.choice(sorted(candidates, key=lambda c: c.name))
    return category, rng.sample(list(category.options), count)
