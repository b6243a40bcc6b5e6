"""Turn source items into AQUA's four types in the released layout, with a build manifest.

The rules for the source's own defects (each counted in the manifest, item by item):
- whitespace around a choice or the answer is stripped (`whitespace_stripped`);
- a choice holding a question ("…setting?": two items pasted together) skips the clip
  (`question_in_choices`), as does an answer that is not among the choices
  (`answer_not_in_choices`) or fewer than two distinct choices (`fewer_than_two_choices`);
- a choice listed twice is kept once, in its first place, in every type
  (`duplicate_choice`; `duplicate_answer` when it is the answer): AAD so removes every copy;
- a clip whose answer is itself a rejection ("none of the speakers") is skipped
  (`answer_is_rejection`): its AAD would ask the very judgement its Solvable item asks;
- a rejection-like distractor is left out of AAD, whose only rejection must be the appended
  one (`aad_rejection_choice_dropped`); Solvable keeps it, as the source has it;
- an AAD item left with one distractor (two-choice sources) is kept and noted
  (`aad_single_distractor`).
"""

from __future__ import annotations

import hashlib
import json
import random
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from aqua_tasks.build.categories import BANK_FILE, Bank, choose_iasd
from aqua_tasks.build.iaqd import IaqdGenerator, IaqdRequest, TemplateGenerator, draft_for, noun_of
from aqua_tasks.build.source import SourceItem
from aqua_tasks.build.text import inline_question, is_rejection_like, option_key
from aqua_tasks.core.data import BUILT_TRACKS, name_track, parse_items
from aqua_tasks.core.manifest import package_version
from aqua_tasks.errors import BuildError
from eval_common.outputs import write_text

MANIFEST_FORMAT = 1
RESERVED_KEYS = frozenset(
    {
        "id",
        "type",
        "subtype",
        "question",
        "options",
        "answer",
        "audio_id",
        "audio_filename",
        "source_id",
    }
)


@dataclass(frozen=True)
class BuildConfig:
    """Every setting that decides the output besides the source and the IAQD generator."""

    seed: int = 0
    iasd_options: int = 3  # mismatched options before "None of the above" (the paper: 3)
    absent_option: str = "None of the above"  # gold of AAD and IASD
    unanswerable_option: str = "Unanswerable"  # gold of IAQD
    guidance: str | None = None  # a sentence after the options (MMAU's demo items have none)

    def __post_init__(self) -> None:
        if self.iasd_options < 2:
            raise BuildError(f"iasd_options={self.iasd_options}: expected 2 or more")


class Skip(Exception):
    """A clip cannot be built; `reason` is its manifest label."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class Prepared:
    """An item's choices after the repairs, with what was repaired or noted."""

    choices: list[str]
    answer: str
    repairs: list[str] = field(default_factory=list)


def prepare(item: SourceItem) -> Prepared:
    """The repaired choices and answer of an item; Skip when it cannot be built."""
    repairs = []
    choices = [c.strip() for c in item.choices]
    answer = item.answer.strip()
    if choices != list(item.choices) or answer != item.answer:
        repairs.append("whitespace_stripped")
    if any("?" in c for c in choices):
        raise Skip("question_in_choices")
    keys = [option_key(c) for c in choices]
    if not answer or option_key(answer) not in keys:
        raise Skip("answer_not_in_choices")
    unique = list(dict.fromkeys(keys))
    if len(unique) < len(keys):
        repairs.append("duplicate_choice")
        if keys.count(option_key(answer)) > 1:
            repairs.append("duplicate_answer")
        choices = [choices[keys.index(k)] for k in unique]
    if len(choices) < 2:
        raise Skip("fewer_than_two_choices")
    answer = next(c for c in choices if option_key(c) == option_key(answer))
    if is_rejection_like(answer):
        raise Skip("answer_is_rejection")
    return Prepared(choices, answer, repairs)


def _entry(
    number: int,
    kind: str,
    subtype: str | None,
    stem: str,
    options: Sequence[str],
    answer: str,
    item: SourceItem,
    config: BuildConfig,
) -> dict[str, Any]:
    entry: dict[str, Any] = {"id": number, "type": kind}
    if subtype is not None:
        entry["subtype"] = subtype
    entry |= {
        "question": inline_question(stem, options, config.guidance),
        "options": list(options),
        "answer": answer,
        "audio_id": item.audio,
        "audio_filename": item.audio,
        "source_id": item.id,
    }
    for key, value in item.metadata.items():
        entry[f"source_{key}" if key in RESERVED_KEYS else key] = value
    return entry


@dataclass
class BuildResult:
    """The entries of the built file and its manifest."""

    entries: list[dict[str, Any]]
    manifest: dict[str, Any]


TALLIES = (
    "skipped",
    "repaired",
    "noted",
    "iaqd",
    "iaqd_failures",
    "iasd_categories",
    "iaqd_attributes",
)


@dataclass
class ClipResult:
    """One source item built on its own: its entries (ids from 0) or why it was skipped."""

    entries: list[dict[str, Any]]
    tally: dict[str, Counter]
    skipped: str | None = None
    reasons: list[str] = field(default_factory=list)


def _clip(
    item: SourceItem,
    prepared: Prepared,
    generator: IaqdGenerator,
    template: TemplateGenerator,
    bank: Bank,
    config: BuildConfig,
    tally: dict[str, Counter],
) -> tuple[list[dict[str, Any]], list[str]]:
    rng = random.Random(f"{config.seed}|{item.id}")  # per clip: independent of every other
    notes = []
    distractors = [c for c in prepared.choices if c != prepared.answer]
    kept = [c for c in distractors if not is_rejection_like(c)]
    if len(kept) < len(distractors):
        notes.append("aad_rejection_choice_dropped")
    if not kept:
        raise Skip("no_aad_distractor")
    if len(kept) == 1:
        notes.append("aad_single_distractor")
    rng.shuffle(kept)
    picked = choose_iasd(bank, (item.question, *prepared.choices), config.iasd_options, rng)
    if picked is None:
        raise Skip("no_iasd_category")
    request = IaqdRequest(
        item.id,
        item.question.strip(),
        tuple(prepared.choices),
        prepared.answer,
        noun_of(item.metadata),
    )
    draft, outcome, fell_back = draft_for(generator, template, request, rng)
    iaqd = tally["iaqd"]
    iaqd["attempts"] += outcome.attempts
    iaqd["cached_replies"] += outcome.cached
    for reason in outcome.failures:
        tally["iaqd_failures"][reason] += 1
    if fell_back:
        iaqd["fallback_to_template"] += 1
        notes.append("iaqd_template_fallback")
    if draft is None:
        raise Skip("no_iaqd_question")
    iaqd[f"written_by_{'template' if fell_back else generator.name}"] += 1
    category, iasd = picked
    stem = item.question.strip()
    absent, unanswerable = config.absent_option, config.unanswerable_option
    entries = [
        _entry(0, "Solvable", None, stem, prepared.choices, prepared.answer, item, config),
        _entry(1, "AAD", "Standard", stem, [*kept, absent], absent, item, config),
        _entry(2, "IASD", category.name, stem, [*iasd, absent], absent, item, config),
        _entry(
            3,
            "IAQD",
            draft.attribute,
            draft.question,
            [*draft.options, unanswerable],
            unanswerable,
            item,
            config,
        ),
    ]
    tally["iasd_categories"][category.name] += 1
    tally["iaqd_attributes"][draft.attribute] += 1
    return entries, notes


def build_one(
    item: SourceItem,
    generator: IaqdGenerator,
    template: TemplateGenerator,
    bank: Bank,
    config: BuildConfig,
) -> ClipResult:
    """One item's four entries (ids 0-3) and its counts, independent of every other item."""
    tally: dict[str, Counter] = {k: Counter() for k in TALLIES}
    try:
        prepared = prepare(item)
        entries, notes = _clip(item, prepared, generator, template, bank, config, tally)
    except Skip as skip:
        tally["skipped"][skip.reason] += 1
        return ClipResult([], tally, skip.reason, [skip.reason])
    tally["repaired"].update(prepared.repairs)
    tally["noted"].update(notes)
    return ClipResult(entries, tally, None, prepared.repairs + notes)


def _in_order(
    items: Sequence[SourceItem], one: Callable[[SourceItem], ClipResult], workers: int
) -> Iterator[ClipResult]:
    """Every item's result in source order, computed by up to `workers` threads."""
    if workers == 1:
        yield from map(one, items)
        return
    pool = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="aqua build")
    try:
        yield from pool.map(one, items)
    finally:
        # On a fatal error or Ctrl-C, items not yet started are never sent.
        pool.shutdown(wait=True, cancel_futures=True)


def build(
    items: Sequence[SourceItem],
    generator: IaqdGenerator,
    bank: Bank,
    config: BuildConfig | None = None,
    *,
    source: dict[str, Any] | None = None,
    on_item: Callable[[], None] | None = None,
) -> BuildResult:
    """The four AQUA types of every buildable item, in source order, and the manifest.

    Items are built `generator.concurrency` at a time; each has its own seeded RNG and its
    results are merged in source order, so the output is the same at any concurrency.
    """
    config = config or BuildConfig()
    concurrency = getattr(generator, "concurrency", 1)
    if not isinstance(concurrency, int) or concurrency < 1:
        raise BuildError(f"concurrency={concurrency!r}: expected an integer, 1 or more")
    template = generator if isinstance(generator, TemplateGenerator) else TemplateGenerator(bank)
    tally: dict[str, Counter] = {k: Counter() for k in TALLIES}
    entries: list[dict[str, Any]] = []
    log = []

    def one(item: SourceItem) -> ClipResult:
        return build_one(item, generator, template, bank, config)

    for item, result in zip(items, _in_order(items, one, concurrency), strict=True):
        first = len(entries)
        for entry in result.entries:
            entry["id"] += first
        entries += result.entries
        for name, counter in result.tally.items():
            tally[name].update(counter)
        if result.reasons:
            action = "skipped" if result.skipped else "built"
            log.append(
                {
                    "position": item.position,
                    "source_id": item.id,
                    "action": action,
                    "reasons": result.reasons,
                }
            )
        if on_item is not None:
            on_item()
    counts = {
        "source_items": len(items),
        "built_clips": len(entries) // 4,
        "skipped_clips": sum(tally["skipped"].values()),
        "entries": len(entries),
    }
    manifest = {
        "format": MANIFEST_FORMAT,
        "tool": "aqua build",
        "package_version": package_version(),
        "source": source or {},
        "config": asdict(config),
        "generator": {"name": generator.name, "settings": generator.settings()},
        "category_bank_sha256": bank_digest(bank),
        "counts": counts,
        **{name: dict(sorted(c.items())) for name, c in tally.items()},
        "items": log,
    }
    return BuildResult(entries, manifest)


def bank_digest(bank: Bank) -> str:
    """A digest of the bank's content (which categories, options and templates were used)."""
    text = json.dumps(asdict(bank), sort_keys=True, ensure_ascii=False, default=list)
    return hashlib.sha256(f"{BANK_FILE}|{text}".encode()).hexdigest()


def dumps(data: Any) -> str:
    """The one JSON rendering of output files: stable, UTF-8 as is, newline-terminated."""
    return json.dumps(data, ensure_ascii=False, indent=2) + "\n"


def manifest_path(output: Path) -> Path:
    """Where the manifest of a built file goes (outside the `AQUA-Bench-*-Track*.json` glob)."""
    return output.with_name(f"build-manifest_{output.stem}.json")


def write_result(result: BuildResult, output: Path) -> Path:
    """Write the built file and its manifest; the manifest's path."""
    # Checked by the reader's own rules first: a file the tasks would refuse is never written.
    track = name_track(output.name) or BUILT_TRACKS[0]
    parse_items(result.entries, track=track, variant="main", source=str(output))
    write_text(output, dumps(result.entries))
    result.manifest["output"] = {
        "file": output.name,
        "sha256": hashlib.sha256(output.read_bytes()).hexdigest(),
    }
    path = manifest_path(output)
    write_text(path, dumps(result.manifest))
    return path
