"""Read saved replies: the authors' results JSON or our tasks' `--log_samples` output."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from aqua_tasks.data import (
    AquaDataError,
    AquaItem,
    detect_track,
    detect_variant,
    load_json_file,
    parse_item,
    task_name,
)
from aqua_tasks.lm_eval_task import doc_to_item
from aqua_tasks.manifest import MANIFEST_FIELDS


@dataclass(frozen=True)
class SavedReply:
    """One item with the reply a model gave to it, and where the reply came from."""

    task: str
    item: AquaItem
    reply: str
    source: str
    extractor: str | None = None
    exclude_defective: bool = False
    manifest: Mapping[str, str] = field(default_factory=dict)


def _reply_text(value: object, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 1:
        return _reply_text(value[0], where)
    raise AquaDataError(f"{where}: reply must be a string, got {type(value).__name__}")


def read_authors_results(path: Path, track: str | None = None) -> list[SavedReply]:
    """Entries of the released JSON format, each with the model's reply under `response`."""
    entries = load_json_file(path)
    if not isinstance(entries, list) or not entries:
        raise AquaDataError(f"{path}: expected a non-empty JSON list of result entries")
    track = track or detect_track(path.name, [e for e in entries if isinstance(e, dict)])
    if track is None:
        raise AquaDataError(
            f"{path}: cannot tell the track from the file name or audio paths; pass --track"
        )
    variant = detect_variant(
        [e.get("options", []) for e in entries if isinstance(e, dict)], path.name
    )
    replies = []
    seen: set[int] = set()
    for index, entry in enumerate(entries):
        where = f"{path}: entry {index}"
        item = parse_item(entry, track=track, variant=variant, where=where)
        if "response" not in entry:
            raise AquaDataError(f"{where}: missing key 'response' (the model's reply)")
        if item.id in seen:
            raise AquaDataError(f"{where}: duplicate id {item.id}")
        seen.add(item.id)
        replies.append(
            SavedReply(
                task=task_name(track, variant),
                item=item,
                reply=_reply_text(entry["response"], where),
                source=where,
            )
        )
    return replies


def _sample_reply(sample: dict, where: str) -> str:
    filtered = sample.get("filtered_resps")
    if isinstance(filtered, list) and filtered:
        return _reply_text(filtered[0], where)
    resps = sample.get("resps")
    if isinstance(resps, list) and resps:
        return _reply_text(resps[0], where)
    raise AquaDataError(f"{where}: sample has neither 'filtered_resps' nor 'resps'")


def read_samples_file(path: Path) -> list[SavedReply]:
    """One `samples_<task>_<time>.jsonl` file written by lm-eval with `--log_samples`."""
    replies = []
    with path.open(encoding="utf-8") as handle:
        for line_no, line in enumerate(handle, 1):
            if not line.strip():
                continue
            where = f"{path}:{line_no}"
            try:
                sample = json.loads(line)
            except json.JSONDecodeError as error:
                raise AquaDataError(f"{where}: malformed JSON: {error.msg}") from None
            doc = sample.get("doc")
            if not isinstance(doc, dict) or "track" not in doc or "options" not in doc:
                raise AquaDataError(f"{where}: not a sample of an aqua_* task (no AQUA doc)")
            try:
                item = doc_to_item(doc)
            except (KeyError, TypeError, ValueError) as error:
                raise AquaDataError(f"{where}: malformed AQUA doc ({error})") from None
            replies.append(
                SavedReply(
                    task=task_from_samples_name(path.name)
                    or task_name(item.track, item.variant, doc.get("prompt_style") or "plain"),
                    item=item,
                    reply=_sample_reply(sample, where),
                    source=where,
                    extractor=doc.get("extractor"),
                    exclude_defective=bool(doc.get("exclude_defective")),
                    manifest={k: doc[k] for k in MANIFEST_FIELDS if k in doc},
                )
            )
    return replies


def task_from_samples_name(name: str) -> str | None:
    """The task of an lm-eval `samples_<task>_<time>.jsonl` file name (None: not one)."""
    # lm-eval names the file samples_<task>_<ISO timestamp>.jsonl; the timestamp has no '_'.
    if not (name.startswith("samples_") and name.endswith(".jsonl")):
        return None
    stem = name[len("samples_") : -len(".jsonl")]
    task, _, _ = stem.rpartition("_")
    return task or None


def _newest_per_task(paths: list[Path]) -> list[Path]:
    newest: dict[str, Path] = {}
    for path in sorted(paths):  # ISO timestamps sort chronologically
        newest[task_from_samples_name(path.name) or path.name] = path
    return list(newest.values())


def find_reply_files(path: Path) -> list[Path]:
    """Reply files under a path: itself, or the newest samples file per task in a run folder."""
    if path.is_file():
        return [path]
    if not path.is_dir():
        raise AquaDataError(f"{path}: no such file or directory")
    samples = [p for p in path.rglob("samples_*.jsonl") if p.is_file()]
    if samples:
        return _newest_per_task(samples)
    jsons = sorted(p for p in path.glob("*.json") if not p.name.startswith("results_"))
    if jsons:
        return jsons
    raise AquaDataError(
        f"{path}: found neither lm-eval samples (samples_*.jsonl, written with --log_samples) "
        "nor result JSON files"
    )


def read_replies(path: str | Path, *, track: str | None = None) -> list[SavedReply]:
    """All saved replies under a file or folder, in either supported format."""
    replies: list[SavedReply] = []
    for file in find_reply_files(Path(path)):
        if file.suffix == ".jsonl":
            replies.extend(read_samples_file(file))
        else:
            replies.extend(read_authors_results(file, track))
    if not replies:
        raise AquaDataError(f"{path}: no replies found")
    return replies


def iter_tasks(replies: list[SavedReply]) -> Iterator[tuple[str, list[SavedReply]]]:
    """Replies grouped by task, in first-seen order."""
    grouped: dict[str, list[SavedReply]] = {}
    for reply in replies:
        grouped.setdefault(reply.task, []).append(reply)
    yield from grouped.items()
