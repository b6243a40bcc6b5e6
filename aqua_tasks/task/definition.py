"""The functions AQUA task YAMLs reference with `!function`: dataset, prompt, audio, scoring."""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence

import datasets

from aqua_tasks.audio.clips import AudioRoots, LazyAudio, probe_audio, resolve_audio
from aqua_tasks.core.data import check_track, check_variant, load_items, track_file
from aqua_tasks.core.docs import (
    TEXT_ONLY_AUDIO_ERROR,
    audio_enabled,
    clip_indices,
    doc_to_item,
    item_to_doc,
)
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, extract, get_extractor_name
from aqua_tasks.core.extract.fallback import (
    FALLBACK_EXTRACTOR,
    NOT_ASKED,
    fallback_settings,
    needs_fallback,
)
from aqua_tasks.core.manifest import DOC_FIELDS, FALLBACK_MANIFEST_FIELDS, run_manifest
from aqua_tasks.core.prompts import check_prompt_style, render_prompt
from aqua_tasks.core.scoring import (
    ALL_METRICS,
    FALLBACK_METRICS,
    item_outcome,
    pack_outcome,
    score_reply,
)
from aqua_tasks.errors import AquaDataError, AudioFileError
from aqua_tasks.task.fallback import check_fallback_settings, reader_for, settings_text
from eval_common.cli import parse_bool

logger = logging.getLogger(__name__)


def task_manifest(
    track: str,
    variant: str = "main",
    *,
    data_dir: str | None = None,
    prompt_style: str = "plain",
    extractor: str = DEFAULT_EXTRACTOR,
    fallback: Mapping | None = None,
) -> dict[str, str]:
    """The manifest of one track's task (data file hash, prompt, extractor, versions)."""
    check_track(track)
    check_variant(variant)
    check_prompt_style(prompt_style)
    name = get_extractor_name(extractor)
    try:
        settings = fallback_settings({"extractor": name, "fallback": fallback})
    except ValueError as error:
        raise AquaDataError(f"--metadata {error}") from None
    if settings is not None:
        check_fallback_settings(settings)  # every type and range, before any generation
    return run_manifest(
        data_file=track_file(data_dir, track, variant),
        track=track,
        variant=variant,
        prompt_style=prompt_style,
        extractor=name,
        fallback=settings,
    )


def build_docs(
    track: str,
    variant: str = "main",
    *,
    data_dir: str | None = None,
    prompt_style: str = "plain",
    extractor: str = DEFAULT_EXTRACTOR,
    exclude_defective: object = False,
    settings: Mapping | None = None,
    fallback: Mapping | None = None,
) -> list[dict]:
    """Docs of one track: validated items with their audio resolved (not decoded)."""
    manifest = task_manifest(
        track,
        variant,
        data_dir=data_dir,
        prompt_style=prompt_style,
        extractor=extractor,
        fallback=fallback,
    )
    run = {key: manifest[key] for key in DOC_FIELDS} | {
        "exclude_defective": parse_bool("exclude_defective", exclude_defective)
    }
    if fallback is not None:
        # A fallback run's docs say which model read them, and carry its client settings
        # (never a key: only the name of its variable), so `process_results` can ask it.
        run |= {k: manifest[k] for k in FALLBACK_MANIFEST_FIELDS}
        run["fallback"] = settings_text(fallback)
        # Opened and asked one test reply now, before any generation: every setting's type,
        # a local model's folder, the cache's folder, the key, the model and the reply form
        # are checked here, not after the last reply.
        reader_for(run["fallback"]).check_endpoint()
    settings = settings or {}
    with_audio = audio_enabled(settings)
    roots = AudioRoots.from_settings(settings)
    items = load_items(data_dir, track, variant)
    clips = clip_indices(items)
    docs = []
    for item in items:
        if not with_audio:
            audio_path, audio_error = "", TEXT_ONLY_AUDIO_ERROR
        else:
            try:
                audio_path = str(resolve_audio(track, item.audio_filename, roots))
                audio_error = ""
            except AudioFileError as error:
                # Reported when lm-eval builds this item's request: under --limit an absent
                # clip that is never requested must not stop the run.
                audio_path, audio_error = "", str(error)
        docs.append(
            item_to_doc(
                item,
                audio_path=audio_path,
                audio_error=audio_error,
                run=run,
                clip_index=clips[item.clip_key],
            )
        )
    return docs


def docs_arguments(settings: Mapping) -> dict:
    """`--metadata` keys and the YAML's `dataset_kwargs`, as `task_manifest` takes them."""
    return {
        "track": str(settings.get("track")),
        "variant": str(settings.get("variant") or "main"),
        "data_dir": settings.get("data_dir"),
        "prompt_style": str(settings.get("prompt") or "plain"),
        "extractor": str(settings.get("extractor") or DEFAULT_EXTRACTOR),
        "fallback": settings.get("fallback"),
    }


def load_dataset(**kwargs: object) -> datasets.DatasetDict:
    """`custom_dataset` hook: receives `--metadata` keys and the YAML's `dataset_kwargs`."""
    docs = build_docs(
        **docs_arguments(kwargs),
        exclude_defective=kwargs.get("exclude_defective", False),
        settings=kwargs,
    )
    excluded = sum(1 for d in docs if d["exclude_defective"] and d["flags"])
    if excluded:
        logger.warning(
            "aqua_%s: exclude_defective is on: %d flagged items are excluded from the metrics",
            kwargs.get("track"),
            excluded,
        )
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def doc_to_text(doc: Mapping) -> str:
    """The released prompt (stem, inline options, guidance) after the audio placeholder."""
    return render_prompt(doc)


def doc_to_target(doc: Mapping) -> str:
    """Gold as '(letter) text' for logs; scoring uses the option text."""
    return f"({chr(ord('a') + int(doc['answer_index']))}) {doc['answer']}"


def doc_to_audio(doc: Mapping) -> list[LazyAudio]:
    """The clip as a lazily decoded 16 kHz mono array; a missing file fails here, pre-inference."""
    if doc["audio_error"]:
        raise AudioFileError(f"aqua_{doc['track']} item {doc['id']}: {doc['audio_error']}")
    try:
        probe_audio(doc["audio_path"])
    except AudioFileError as error:
        raise AudioFileError(f"aqua_{doc['track']} item {doc['id']}: {error}") from None
    return [LazyAudio(doc["audio_path"])]


def fallback_reading(doc: Mapping, reply: str) -> int:
    """What the run's LLM fallback reads in a reply (NOT_ASKED when the rules read it)."""
    item = doc_to_item(doc)
    rules = extract(
        reply, item.options, extractor=FALLBACK_EXTRACTOR, rejection_strings=item.rejection_strings
    )
    if not needs_fallback(reply, rules):
        return NOT_ASKED
    if not doc.get("fallback"):
        raise AquaDataError(
            f"aqua_{doc['track']} item {doc['id']}: extractor {FALLBACK_EXTRACTOR} but the doc "
            "carries no fallback settings; pass --metadata '{\"fallback\": {...}}'"
        )
    return reader_for(str(doc["fallback"])).read_many([(item.options, reply)])[0]


def read_unparsed(pairs: Sequence[tuple[Mapping, str]]) -> int:
    """Ask the fallback, in one concurrent batch per model, for every (doc, reply) of a
    fallback run the rules leave unparsed; the readings wait for `process_results`.

    Returns how many replies were sent. A reader that fails here stops asking and leaves
    the replies it did not read unparsed (`fallback.FallbackReader.read_many`).
    """
    batches: dict[str, list[tuple[Sequence[str], str]]] = {}
    for doc, reply in pairs:
        if doc.get("extractor") != FALLBACK_EXTRACTOR or not doc.get("fallback"):
            continue
        item = doc_to_item(doc)
        rules = extract(
            reply,
            item.options,
            extractor=FALLBACK_EXTRACTOR,
            rejection_strings=item.rejection_strings,
        )
        if needs_fallback(reply, rules):
            batches.setdefault(str(doc["fallback"]), []).append((item.options, reply))
    for settings, batch in batches.items():
        reader = reader_for(settings)
        reader.read_many(batch, all_failed_is_error=True)
        logger.info("%s", reader.summary())
    return sum(len(b) for b in batches.values())


def process_results(doc: Mapping, results: Sequence[str]) -> dict[str, int]:
    """Score one reply; every metric receives the same packed per-item outcome.

    Under `aqua-rules+llm` the fallback's reading is also the value of `n_fallback` and
    `n_fallback_failed`, so the samples record what it read.
    """
    reply = results[0] if results else ""
    reply = reply if isinstance(reply, str) else str(reply)
    fallback = fallback_reading(doc, reply) if doc["extractor"] == FALLBACK_EXTRACTOR else None
    verdict = score_reply(
        doc_to_item(doc),
        reply,
        extractor=doc["extractor"],
        exclude_defective=bool(doc["exclude_defective"]),
        fallback=fallback,
    )
    # lm-eval logs this value once per metric in every sample line: it holds only what the
    # metrics read, packed into one small integer (see scoring.pack_outcome).
    values = dict.fromkeys(ALL_METRICS, pack_outcome(int(doc["clip_index"]), item_outcome(verdict)))
    if fallback is not None:
        values |= dict.fromkeys(FALLBACK_METRICS, fallback)
    return values
