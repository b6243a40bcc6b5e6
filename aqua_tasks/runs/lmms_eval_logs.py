"""lmms-eval logs of AQUA tasks: their items rebuilt from the released data, checked, and read.

lmms-eval 0.7.3 (`--log_samples --output_path OUT`) writes `OUT/<model>/<stamp>_results.json`
and `<stamp>_samples_<task>.jsonl`, the stamp as `YYYYMMDD_HHMMSS`. Its sample rows drop the
doc (and write a `doc_hash` that is the same for every row: the hash of null), so the item a
row answered is known only by its `doc_id`, the index of the doc in the task's dataset. AQUA
tasks build their docs in the released file's order under either harness, so doc_id i of
`aqua_animal` is entry i of the released Animal file: the items are rebuilt from the data
folder, and every row is checked against what it did log (`target`, `input`) so that a
different data folder is refused rather than silently scored.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aqua_tasks.core.data import AquaItem, load_items, track_file
from aqua_tasks.core.docs import clip_indices, item_to_doc
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR
from aqua_tasks.core.manifest import sha256_file, sha256_text
from aqua_tasks.core.prompts import render_prompt, render_question
from aqua_tasks.core.task_name import choice_task
from aqua_tasks.errors import AquaDataError, LmmsLogError, RunError
from aqua_tasks.runs.discovery import LMMS_SAMPLES_NAME, is_lmms_row, iter_jsonl
from aqua_tasks.runs.model import RunItem, item_manifest, reply_text
from eval_common.cli import parse_bool

DATA_DIR_HELP = (
    "pass --data-dir, the folder of the released AQUA-Bench files the run was made from "
    "(lmms-eval logs no docs; items are rebuilt from the data by doc_id)"
)


def content_hash(doc: Mapping[str, Any]) -> str:
    """Hex SHA-256 of a rebuilt doc's content (stands in for the constant logged doc_hash)."""
    return sha256_text(json.dumps(doc, sort_keys=True, ensure_ascii=False))


def expected_target(item: AquaItem) -> str:
    """The target an AQUA task logs for an item: '(letter) gold option'."""
    return f"({chr(ord('a') + item.answer_index)}) {item.answer}"


@dataclass(frozen=True)
class TaskData:
    """The released items one AQUA task was built from, in doc order, with their file."""

    task: str
    track: str
    variant: str
    prompt_style: str
    data_file: Path
    data_sha256: str
    items: tuple[AquaItem, ...]
    clips: Mapping[str, int]


def task_data(task: str, data_dir: str | Path | None) -> TaskData:
    """The items of an AQUA task's released file; LmmsLogError when the data is not there."""
    name = choice_task(task)
    if name is None:
        raise LmmsLogError(f"{task}: not an AQUA task; no released file to rebuild its docs from")
    if data_dir is None:
        raise LmmsLogError(f"an lmms-eval log of {task}; {DATA_DIR_HELP}")
    track, variant, prompt_style = name.track, str(name.variant), str(name.prompt_style)
    try:
        path = track_file(data_dir, track, variant)
        items = tuple(load_items(data_dir, track, variant))
    except AquaDataError as error:
        raise LmmsLogError(f"{task}: {error}") from None
    return TaskData(
        task=task,
        track=track,
        variant=variant,
        prompt_style=prompt_style,
        data_file=path,
        data_sha256=sha256_file(path),
        items=items,
        clips=clip_indices(items),
    )


def recorded_data(task: str, metadata: Mapping[str, Any]) -> tuple[TaskData, str]:
    """The task's items from the data folder the run recorded, and a note saying so.

    Used only when that folder holds the task's file and the file hashes to the
    `data_sha256` the run recorded: a folder of another machine, or one whose content has
    changed since, is refused with the reason (LmmsLogError), never read silently.
    """
    recorded_dir = metadata.get("data_dir")
    manifest = metadata.get("aqua_manifest")
    recorded_sha = manifest.get("data_sha256") if isinstance(manifest, Mapping) else None
    if not recorded_dir:
        return task_data(task, None), ""
    if not Path(str(recorded_dir)).expanduser().is_dir():
        raise LmmsLogError(
            f"an lmms-eval log of {task}; the data_dir it recorded, {recorded_dir}, is not a "
            f"folder here; {DATA_DIR_HELP}"
        )
    if not recorded_sha:
        raise LmmsLogError(
            f"an lmms-eval log of {task}; it records data_dir {recorded_dir} but no "
            f"data_sha256 to check that folder's file against; {DATA_DIR_HELP}"
        )
    data = task_data(task, str(recorded_dir))
    if data.data_sha256 != recorded_sha:
        raise LmmsLogError(
            f"an lmms-eval log of {task}; {data.data_file} in the data_dir it recorded "
            f"hashes to {data.data_sha256}, not the recorded {recorded_sha} (changed since "
            f"the run); {DATA_DIR_HELP}"
        )
    note = (
        f"{task}: items rebuilt from the data_dir the run recorded, {recorded_dir} "
        f"({data.data_file.name} matches the recorded SHA-256)"
    )
    return data, note


def check_recorded_data(data: TaskData, recorded: Mapping[str, Any], where: str) -> None:
    """Refuse a data file other than the one the run's results record (when they record it)."""
    recorded_sha = recorded.get("data_sha256")
    if recorded_sha and recorded_sha != data.data_sha256:
        raise LmmsLogError(
            f"{where}: field 'data_sha256' of task {data.task} is {recorded_sha} but "
            f"{data.data_file} hashes to {data.data_sha256}; pass the --data-dir the run used"
        )


def row_doc_id(row: Mapping[str, Any], where: str, data: TaskData) -> int:
    """The row's doc_id, checked to be a doc of the task's released file."""
    value = row.get("doc_id")
    if isinstance(value, bool) or not isinstance(value, int):
        raise LmmsLogError(f"{where}: field 'doc_id' must be an integer, got {value!r}")
    if not 0 <= value < len(data.items):
        raise LmmsLogError(
            f"{where}: field 'doc_id' is {value} but {data.data_file.name} has "
            f"{len(data.items)} docs (0–{len(data.items) - 1}); pass the --data-dir the run used"
        )
    return value


def check_row(logged: RunItem, item: AquaItem, data: TaskData) -> None:
    """Refuse a row whose logged target or input disagrees with the rebuilt item."""
    if logged.target != expected_target(item):
        raise LmmsLogError(
            f"{logged.source}: field 'target' is {logged.target!r} but doc {logged.doc_id} of "
            f"{data.data_file.name} (id {item.id}) gives {expected_target(item)!r}; "
            "pass the --data-dir the run used"
        )
    # The prompt around the question is the task's and the model's business (placeholders,
    # pre/post prompts); the released question text itself must be in it.
    if logged.prompt is not None and item.question not in logged.prompt:
        raise LmmsLogError(
            f"{logged.source}: field 'input' does not hold the question of doc {logged.doc_id} "
            f"of {data.data_file.name} (id {item.id}); pass the --data-dir the run used"
        )


def rebuilt_doc(
    item: AquaItem,
    data: TaskData,
    *,
    extractor: str,
    exclude_defective: bool,
) -> dict[str, Any]:
    """The doc lm-eval would have logged for an item, less what depends on the machine.

    It carries `manifest.DOC_FIELDS` and the exclusion flag like an lm-eval doc, so that the
    readers and the comparability checks treat the items of both harnesses alike.
    """
    run = {
        "track": data.track,
        "variant": data.variant,
        "prompt_style": data.prompt_style,
        "extractor": extractor,
        "exclude_defective": exclude_defective,
    }
    return item_to_doc(
        item, audio_path="", audio_error="", run=run, clip_index=data.clips[item.clip_key]
    )


def prompt_sha256(prompt: str | None, doc: Mapping[str, Any] | None = None) -> str | None:
    """SHA-256 of a logged prompt in lm-eval's form, as lm-eval's `prompt_hash` is of its own.

    An AQUA task under lmms-eval sends the released prompt without its audio placeholder
    (`prompts.render_question`; the models put the clip in front, `aqua-audiolm` puts the
    placeholder back), lm-eval logs it with the placeholder: when the logged input is exactly
    the doc's `render_question`, the hash is of `render_prompt`, so that the same prompt
    hashes alike under both harnesses. Any other input is hashed as logged.
    """
    if prompt is None:
        return None
    if doc is not None and prompt == render_question(doc):
        return sha256_text(render_prompt(doc))
    return sha256_text(prompt)


def row_item(row: Mapping[str, Any], task: str, path: Path, line: int) -> RunItem:
    """One lmms-eval row as an item of a task: reply, target, prompt and doc id, but no doc.

    A reply that is no text (e.g. a multiple-choice task's list of scores) is none here;
    an AQUA item's is checked when its doc is rebuilt (`aqua_item`).
    """
    where = f"{path}:{line}"
    try:
        reply = reply_text(row.get("filtered_resps"), where, "filtered_resps")
    except RunError:
        reply = ""
    doc_id, prompt = row.get("doc_id"), row.get("input")
    prompt = prompt if isinstance(prompt, str) else None
    return RunItem(
        task,
        None,
        reply,
        where,
        file=path,
        line=line,
        doc_id=doc_id if isinstance(doc_id, int) else None,
        prompt_hash=prompt_sha256(prompt),
        target=row.get("target"),
        prompt=prompt,
    )


def _lmms_settings(task: str, metadata: Mapping[str, Any], where: str) -> tuple[str, bool]:
    # lmms-eval rows hold no doc: the extractor and exclusion flag a task ran with are what its
    # results file recorded (its manifest, else its metadata), else the defaults.
    manifest = metadata.get("aqua_manifest")
    manifest = manifest if isinstance(manifest, Mapping) else {}
    extractor = str(manifest.get("extractor") or metadata.get("extractor") or DEFAULT_EXTRACTOR)
    try:
        exclude = parse_bool("exclude_defective", metadata.get("exclude_defective", False))
    except ValueError as error:
        raise RunError(f"{where}: task {task}: {error}") from None
    return extractor, exclude


@dataclass(frozen=True)
class LmmsSamples:
    """The items of one lmms-eval samples file, and where their data came from when that is
    not the folder the caller gave (a note for the user; "" otherwise)."""

    items: list[RunItem]
    note: str = ""


def lmms_rows(path: Path) -> list[tuple[int, Mapping[str, Any]]]:
    """(line number, row) of an lmms-eval samples file; RunError at a line that is no row."""
    rows = list(iter_jsonl(path))
    for line_no, row in rows:
        if not is_lmms_row(row):
            raise RunError(
                f"{path}:{line_no}: not an lmms-eval sample row (expected doc_id, target and "
                "filtered_resps, and no doc)"
            )
    return rows


def aqua_item(
    row: Mapping[str, Any],
    logged: RunItem,
    data: TaskData,
    *,
    extractor: str,
    exclude_defective: bool,
    known: Mapping[str, Any],
) -> RunItem:
    """A row's item rebuilt by doc id from the released data, checked against what it logged."""
    doc_id = row_doc_id(row, logged.source, data)
    item = data.items[doc_id]
    logged = replace(logged, doc_id=doc_id)
    check_row(logged, item, data)
    doc = rebuilt_doc(item, data, extractor=extractor, exclude_defective=exclude_defective)
    return replace(
        logged,
        item=item,
        reply=reply_text(row.get("filtered_resps"), logged.source, "filtered_resps"),
        extractor=extractor,
        exclude_defective=exclude_defective,
        manifest=item_manifest(doc, known),
        prompt_hash=prompt_sha256(logged.prompt, doc),
        doc_hash=content_hash(doc),
        doc=doc,
    )


def read_lmms_samples_file(
    path: str | Path,
    task: str | None = None,
    *,
    data_dir: str | Path | None,
    metadata: Mapping[str, Mapping] | None = None,
    recorded_in: str | None = None,
) -> LmmsSamples:
    """The items of one lmms-eval samples file, AQUA ones rebuilt by doc id from the data.

    `metadata` is the per-task config metadata its results file (`recorded_in`) holds
    (`recorded_metadata`). Without `data_dir` the data folder the run recorded is used when
    its file hashes as recorded (`recorded_data`). Every row's doc id, target and input are
    checked against the rebuilt item; a data file other than the one the results record is
    refused. Another task's rows are kept for their ids, replies and prompts.
    """
    path = Path(path)
    match = LMMS_SAMPLES_NAME.match(path.name)
    task = task or (match.group("name") if match else None)
    if task is None:
        raise RunError(
            f"{path}: lmms-eval rows name no task; keep lmms-eval's file name "
            "<stamp>_samples_<task>.jsonl"
        )
    rows = [(row, row_item(row, task, path, line_no)) for line_no, row in lmms_rows(path)]
    if choice_task(task) is None:
        return LmmsSamples([logged for _, logged in rows])
    task_metadata = (metadata or {}).get(task) or {}
    recorded = task_metadata.get("aqua_manifest")
    recorded = recorded if isinstance(recorded, Mapping) else {}
    extractor, exclude = _lmms_settings(task, task_metadata, recorded_in or str(path))
    note = ""
    try:
        if data_dir is None:
            data, note = recorded_data(task, task_metadata)
        else:
            data = task_data(task, data_dir)
    except LmmsLogError as error:
        raise RunError(f"{path}: {error}") from None
    known = {**recorded, "data_file": data.data_file.name, "data_sha256": data.data_sha256}
    check_recorded_data(data, recorded, recorded_in or str(path))
    items = [
        aqua_item(row, logged, data, extractor=extractor, exclude_defective=exclude, known=known)
        for row, logged in rows
    ]
    return LmmsSamples(items, note)
