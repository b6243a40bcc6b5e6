"""lm-eval samples files (`samples_<task>_<time>.jsonl`, `--log_samples`) read into run items.

Every sample logs its doc: an AQUA doc gives the item, whose reply is scored; a sample of
another task is kept for its doc, hashes and reply (the regression gate compares them).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from aqua_tasks.core.docs import doc_to_item, is_aqua_doc
from aqua_tasks.core.task_name import TaskName
from aqua_tasks.errors import RunError, TrackMismatchError
from aqua_tasks.runs.discovery import SAMPLES_NAME, is_lmms_row, iter_jsonl
from aqua_tasks.runs.model import RunItem, item_manifest, reply_text


def _sample_reply(sample: Mapping, where: str) -> str:
    # lm-eval logs a list of replies per filter (one per repeat): the first is scored.
    for key in ("filtered_resps", "resps"):
        value = sample.get(key)
        if isinstance(value, list) and value:
            return reply_text(value[0], where, key)
    raise RunError(f"{where}: sample has neither 'filtered_resps' nor 'resps'")


def _other_reply(sample: Mapping, where: str) -> str:
    # Another task's reply is kept for the gate and the judge; one that is no text (e.g. a
    # multiple-choice task's log-likelihoods) is none.
    replies = sample.get("filtered_resps")
    try:
        return reply_text(replies[0], where) if isinstance(replies, list) and replies else ""
    except RunError:
        return ""


def _sent_prompt(sample: Mapping) -> str | None:
    """The prompt lm-eval sent for a sample (its first request's context), if it logged it."""
    arguments = sample.get("arguments")
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            return first["arg_0"]
    return None


def _aqua_sample(
    sample: Mapping,
    task: str | None,
    where: str,
    manifests: Mapping[str, Mapping],
    **logged: Any,
) -> RunItem:
    doc = sample["doc"]
    if not is_aqua_doc(doc):
        raise RunError(f"{where}: not a sample of an aqua_* task (no AQUA doc)")
    try:
        item = doc_to_item(doc)
    except KeyError as error:
        raise RunError(f"{where}: malformed AQUA doc (no field {error})") from None
    except (TypeError, ValueError) as error:
        raise RunError(f"{where}: malformed AQUA doc ({error})") from None
    task = task or str(
        TaskName.for_questions(item.track, item.variant, doc.get("prompt_style") or "plain")
    )
    return RunItem(
        task=task,
        item=item,
        reply=_sample_reply(sample, where),
        source=where,
        extractor=doc.get("extractor"),
        exclude_defective=bool(doc.get("exclude_defective")),
        manifest=item_manifest(doc, manifests.get(task)),
        fallback=_fallback_reading(sample, where),
        **logged,
    )


def _fallback_reading(sample: Mapping, where: str) -> int | None:
    # An aqua-rules+llm run logs what its LLM fallback read as the value of `n_fallback`.
    value = sample.get("n_fallback")
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise RunError(f"{where}: n_fallback must be a fallback reading (an integer >= 0)")
    return value


def _other_sample(sample: Mapping, task: str, where: str, **logged: Any) -> RunItem:
    return RunItem(task, None, _other_reply(sample, where), where, **logged)


def _check_tracks(path: Path, task: str | None, items: Sequence[RunItem]) -> None:
    tracks = sorted({i.item.track for i in items if i.item is not None})
    if len(tracks) > 1:
        raise TrackMismatchError(f"{path}: holds docs of several tracks ({', '.join(tracks)})")
    parsed = TaskName.parse(task) if task else None
    named = parsed.track if parsed is not None else None
    if tracks and named is not None and named != tracks[0]:
        raise TrackMismatchError(
            f"{path}: the file name says task {task} (track {named}) but its docs are of "
            f"track {tracks[0]}"
        )


def read_samples_file(
    path: str | Path, task: str | None = None, manifests: Mapping[str, Mapping] | None = None
) -> list[RunItem]:
    """The items of one lm-eval samples file (task: from its name, else from the AQUA docs).

    `manifests` are the per-task manifests its results file recorded (`recorded_manifests`).
    """
    path = Path(path)
    match = SAMPLES_NAME.match(path.name)
    task = task or (match.group("name") if match else None)
    items: list[RunItem] = []
    aqua: bool | None = None  # decided by the first sample: a task's docs are all alike
    for line_no, sample in iter_jsonl(path):
        where = f"{path}:{line_no}"
        if not isinstance(sample, dict) or not isinstance(sample.get("doc"), dict):
            hint = (
                "; an lmms-eval row: keep lmms-eval's file name <stamp>_samples_<task>.jsonl"
                if is_lmms_row(sample)
                else ""
            )
            raise RunError(f"{where}: not an lm-eval sample (no 'doc'){hint}")
        if aqua is None:
            aqua = is_aqua_doc(sample["doc"])
        try:
            doc_id = int(sample["doc_id"]) if "doc_id" in sample or not aqua else None
        except (KeyError, TypeError, ValueError):
            raise RunError(f"{where}: not an lm-eval sample (no integer 'doc_id')") from None
        logged = {
            "file": path,
            "line": line_no,
            "doc_id": doc_id,
            "filter": str(sample.get("filter") or "none"),
            "prompt_hash": sample.get("prompt_hash"),
            "doc_hash": sample.get("doc_hash"),
            "doc": sample["doc"],
            "target": sample.get("target"),
            "prompt": _sent_prompt(sample),
        }
        if aqua:
            items.append(_aqua_sample(sample, task, where, manifests or {}, **logged))
        else:
            items.append(_other_sample(sample, task or path.stem, where, **logged))
    _check_tracks(path, task, items)
    return items
