"""A saved run as read: its items with their replies, and what its results file records."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqua_tasks.core.data import AquaItem
from aqua_tasks.core.docs import audio_enabled, doc_audio
from aqua_tasks.core.manifest import FALLBACK_MANIFEST_FIELDS, MANIFEST_FIELDS
from aqua_tasks.errors import RunError
from aqua_tasks.runs.discovery import (
    HARNESS_LM_EVAL,
    RunFiles,
    evaluation_results,
    recorded_config,
    recorded_metadata,
    run_label,
    when,
)


@dataclass(frozen=True)
class RunItem:
    """One item of a run with the model's reply, where it was read and what was logged with it.

    `item` is None for a sample of a non-AQUA task (kept for its doc and hashes); `source`
    names the place for messages ("file:line" or "file: entry N"), `file` and `line` locate it.
    `target` (the reference) and `prompt` (the text sent) are as the harness logged them,
    None where it logged none.
    """

    task: str
    item: AquaItem | None
    reply: str
    source: str
    extractor: str | None = None
    exclude_defective: bool = False
    manifest: Mapping[str, str | None] = field(default_factory=dict)
    file: Path | None = None
    line: int | None = None
    doc_id: int | None = None
    filter: str = "none"
    prompt_hash: str | None = None
    doc_hash: str | None = None
    doc: Mapping[str, Any] = field(default_factory=dict)
    target: Any = None
    prompt: str | None = None
    fallback: int | None = None  # what the LLM fallback read (aqua-rules+llm runs), if logged

    @property
    def key(self) -> tuple[str, int]:
        """(task, item id) of an AQUA item, else (task, lm-eval doc_id)."""
        return (self.task, self.item.id if self.item is not None else int(self.doc_id or 0))


def reply_text(value: object, where: str, field_name: str = "reply") -> str:
    """A logged reply as text: a string, one inside one-reply lists, or None (no reply)."""
    while isinstance(value, list) and len(value) == 1:
        value = value[0]
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    raise RunError(
        f"{where}: field {field_name!r} must be one reply (a string), got {type(value).__name__}"
    )


def item_manifest(doc: Mapping, recorded: Mapping | None = None) -> dict[str, str | None]:
    """An AQUA item's run manifest: its doc's fields, the rest from its task's recorded one.

    Docs written by 0.1.0 carry the whole manifest; later ones only `manifest.DOC_FIELDS`,
    the rest being recorded once per task in the results file (`recorded`). A field neither
    holds is None, i.e. unknown (e.g. a samples file read without its results file).
    """
    recorded = recorded if isinstance(recorded, Mapping) else {}
    manifest = {k: doc[k] if k in doc else recorded.get(k) for k in MANIFEST_FIELDS}
    # Only a fallback run records these: a rules-only run's manifest keeps its layout.
    for key in FALLBACK_MANIFEST_FIELDS:
        if doc.get(key) or recorded.get(key):
            manifest[key] = doc.get(key) or recorded.get(key)
    return manifest


@dataclass(frozen=True)
class RunSource:
    """Where a task's items were read: the file, the model its evaluation records, and when.

    `model` is None when nothing records it (the authors' format, samples without their
    results file); `dated_by` says where the date comes from ("recorded", "file name", "mtime").
    """

    task: str
    file: Path
    model: str | None
    date: str
    dated_by: str
    results: Path | None = None

    def describe(self) -> str:
        """`file (model, date)` on one line."""
        model = self.model or "model not recorded"
        return f"{self.file.name} ({model}, {self.date}, {self.dated_by})"

    def as_record(self) -> dict[str, str | None]:
        """The source as JSON-ready fields."""
        return {
            "task": self.task,
            "file": str(self.file),
            "model": self.model,
            "date": self.date,
            "dated_by": self.dated_by,
            "results": str(self.results) if self.results is not None else None,
        }


@dataclass(frozen=True)
class Run:
    """A saved run: every item with its reply, and what its newest lm-eval results record."""

    path: Path
    items: tuple[RunItem, ...]
    files: RunFiles
    notes: tuple[str, ...] = ()  # how it was read, for the user (e.g. the data folder used)

    @property
    def harness(self) -> str:
        """What wrote the run: "lm-eval", "lmms-eval" or "authors' results"."""
        return self.files.harness

    @property
    def aqua_items(self) -> list[RunItem]:
        """The items of AQUA tasks, in reading order."""
        return [i for i in self.items if i.item is not None]

    @property
    def other_items(self) -> list[RunItem]:
        """The logged samples of other tasks (no AQUA item), in reading order."""
        return [i for i in self.items if i.item is None]

    @property
    def results(self) -> Mapping[str, Any]:
        """The newest lm-eval results file's content ({} when there is none)."""
        payload = self.files.results_payload
        return payload if isinstance(payload, Mapping) else {}

    @property
    def label(self) -> str:
        """The model's label from the results config, else the path's name."""
        config = self.results.get("config")
        return run_label(config) if isinstance(config, Mapping) else self.path.name

    def sources(self) -> list[RunSource]:
        """Per task and file, the run its items come from (file, model, date), in reading order."""
        tasks: dict[Path, list[str]] = {}
        for item in self.items:
            if item.file is not None and item.task not in tasks.setdefault(item.file, []):
                tasks[item.file].append(item.task)
        found = []
        for samples in self.files.samples:
            result = evaluation_results(self.files, samples)
            payload = self.files.results_payloads.get(result.path) if result is not None else None
            config = recorded_config(payload)
            for task in tasks.get(samples.path, []):
                found.append(
                    RunSource(
                        task,
                        samples.path,
                        run_label(config) if config is not None else None,
                        when(samples.time),
                        samples.time_from,
                        result.path if result is not None else None,
                    )
                )
        for path in self.files.authors:
            for task in tasks.get(path, []):
                found.append(RunSource(task, path, None, when(path.stat().st_mtime), "mtime"))
        return found

    def task_metadata(self) -> dict[str, Mapping[str, Any]]:
        """Per task, the `metadata` its config recorded in the results."""
        configs = self.results.get("configs") or {}
        return {task: (cfg or {}).get("metadata") or {} for task, cfg in configs.items()}

    def audio_modes(self) -> dict[str, bool | None]:
        """Per AQUA task, whether the run fed audio; None where nothing it holds says so.

        The results file of the task's own evaluation records it; without one, lm-eval's
        docs do (a text-only run logs `TEXT_ONLY_AUDIO_ERROR`). lmms-eval rows (docs rebuilt
        from the data) and the authors' format record nothing.
        """
        recorded = {f.path: recorded_metadata(self.files, f) for f in self.files.samples}
        modes: dict[str, set[bool | None]] = {}
        for item in self.aqua_items:
            metadata = recorded.get(item.file, {}).get(item.task) if item.file else None
            if metadata is not None:
                mode = audio_enabled(metadata)
            elif self.harness == HARNESS_LM_EVAL:
                mode = doc_audio(item.doc)
            else:
                mode = None
            modes.setdefault(item.task, set()).add(mode)
        return {task: found.pop() if len(found) == 1 else None for task, found in modes.items()}


def require_aqua_items(run: Run) -> list[RunItem]:
    """The run's AQUA items; RunError saying what the path lacks when there are none."""
    items = run.aqua_items
    if items:
        return items
    files = run.files
    if not (files.samples or files.authors):
        raise RunError(
            f"{run.path}: found neither lm-eval or lmms-eval samples (samples_*.jsonl, "
            "<stamp>_samples_<task>.jsonl, written with --log_samples) nor result JSON files"
        )
    raise RunError(f"{run.path}: no replies to aqua_* tasks found")


def iter_tasks(items: Iterable[RunItem]) -> Iterator[tuple[str, list[RunItem]]]:
    """Items grouped by task, in first-seen order."""
    grouped: dict[str, list[RunItem]] = {}
    for item in items:
        grouped.setdefault(item.task, []).append(item)
    yield from grouped.items()
