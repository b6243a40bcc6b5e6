"""The doc lm-eval stores for an AQUA item, and the run setting that decides its audio."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from aqua_tasks.core.data import AquaItem
from eval_common.cli import parse_bool

# The `audio_error` every doc of a text-only run logs: a samples file read without its
# results file still says whether its run fed audio.
TEXT_ONLY_AUDIO_ERROR = "text-only run: no audio"


def audio_enabled(settings: Mapping) -> bool:
    """Whether a run feeds audio (default) or is an explicit text-only run (`"audio": false`)."""
    return parse_bool("audio", settings.get("audio", True))


def clip_indices(items: Iterable[AquaItem]) -> dict[str, int]:
    """Each clip's index (0, 1, …) by `AquaItem.clip_key`, in order of its first item.

    Given the items of one released file in file order, the index is exact and stable: the
    same file always numbers its clips the same way.
    """
    indices: dict[str, int] = {}
    for item in items:
        indices.setdefault(item.clip_key, len(indices))
    return indices


def item_to_doc(
    item: AquaItem, *, audio_path: str, audio_error: str, run: Mapping, clip_index: int
) -> dict:
    """Flatten an item into the doc lm-eval stores: plain strings, no audio samples.

    `run` holds what every item of the run shares and scoring or reading needs per item
    (`manifest.DOC_FIELDS` and the exclusion flag); `clip_index` is from `clip_indices`.
    """
    return {
        "id": item.id,
        "track": item.track,
        "variant": item.variant,
        "type": item.type,
        "subtype": item.subtype,
        "question": item.question,
        "options": list(item.options),
        "answer": item.answer,
        "answer_index": item.answer_index,
        "audio_filename": item.audio_filename,
        "clip_index": clip_index,
        "true_class": item.true_class,
        "flags": list(item.flags),
        "audio_path": audio_path,
        "audio_error": audio_error,
        **run,
    }


def doc_audio(doc: Mapping) -> bool | None:
    """Whether the run that logged an lm-eval doc fed audio, or None when the doc does not say."""
    if "audio_error" not in doc or "audio_path" not in doc:
        return None
    return doc["audio_error"] != TEXT_ONLY_AUDIO_ERROR


def is_aqua_doc(doc: object) -> bool:
    """Whether a logged doc is one of an AQUA task (it carries the track and the options)."""
    return isinstance(doc, Mapping) and "track" in doc and "options" in doc


def doc_to_item(doc: Mapping) -> AquaItem:
    """Rebuild the validated item from a stored doc (lm-eval docs or logged samples)."""
    return AquaItem(
        id=int(doc["id"]),
        track=doc["track"],
        variant=doc["variant"],
        type=doc["type"],
        subtype=doc.get("subtype") or "",
        question=doc["question"],
        options=tuple(doc["options"]),
        answer=doc["answer"],
        answer_index=int(doc["answer_index"]),
        audio_filename=doc["audio_filename"],
        true_class=doc.get("true_class") or "",
        flags=tuple(doc.get("flags") or ()),
    )
