"""Logged samples as orca score input (behind `aqua orca-items`), from the run readers' items.

Each item becomes the record `metric: orca` would have judged in the run: the same doc
fields, reference and filtered reply, with the same id, so `orca score` on the output gives
the numbers of judging in the run.

The items are those the run readers read: lm-eval samples with their docs
(`lm_eval_samples`), and lmms-eval logs of AQUA tasks, whose docs are rebuilt by doc id from the
released files (`data_dir`, checked as `aqua score` checks them). lmms-eval rows of any other
task carry no doc: theirs are rebuilt from the task's own data file (`docs_file`).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from aqua_tasks.core.task_name import choice_task
from aqua_tasks.runs.discovery import (
    HARNESS_LM_EVAL,
    HARNESS_LMMS_EVAL,
    LMMS_SAMPLES_NAME,
    first_row,
    is_lmms_row,
    iter_jsonl,
    read_json,
)
from aqua_tasks.runs.lm_eval_samples import read_samples_file
from aqua_tasks.runs.lmms_eval_logs import lmms_rows, row_item
from aqua_tasks.runs.model import RunItem
from aqua_tasks.runs.read import read_samples_items
from orca_judge.metric.payloads import judge_inputs
from orca_judge.metric.settings import OrcaMetricSettings

# The metric settings stand in for field names only here; no judge is loaded.
NOT_LOADED = "(field names only)"


def is_lmms_samples(path: str | Path) -> bool:
    """Whether a samples file is lmms-eval's (by its name, else by its first row)."""
    path = Path(path)
    return bool(LMMS_SAMPLES_NAME.match(path.name)) or is_lmms_row(first_row(path))


def read_docs_file(path: str | Path) -> list[Any]:
    """A task's docs in its order: a JSON list, or JSON Lines (one doc per line)."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    if path.suffix == ".jsonl":
        return [doc for _, doc in iter_jsonl(path)]
    docs = read_json(path)
    if not isinstance(docs, list):
        raise ValueError(f"{path}: expected a JSON list of docs (or a .jsonl file)")
    return docs


def _doc_by_id(doc_id: object, where: str, docs: list[Any], docs_file: Path) -> dict:
    if isinstance(doc_id, bool) or not isinstance(doc_id, int):
        raise ValueError(f"{where}: field 'doc_id' must be an integer, got {doc_id!r}")
    if not 0 <= doc_id < len(docs):
        raise ValueError(
            f"{where}: field 'doc_id' is {doc_id} but {docs_file} has {len(docs)} docs; "
            "pass the task's data file the run used"
        )
    doc = docs[doc_id]
    if not isinstance(doc, dict):
        raise ValueError(f"{docs_file}: doc {doc_id} is not a JSON object")
    return doc


def _check_question(logged: RunItem, doc: dict, field: str | None, docs_file: Path) -> None:
    # The judge reads the rebuilt doc: a doc file in another order would pair replies with
    # other questions. The logged prompt holds the question wherever the task put it.
    name = field if field is not None else "question"
    question, prompt = doc.get(name), logged.prompt
    held = isinstance(question, str) and prompt is not None and question in prompt
    if isinstance(question, str) and question and prompt is not None and not held:
        raise ValueError(
            f"{logged.source}: field 'input' does not hold doc {logged.doc_id}'s {name!r} from "
            f"{docs_file}; pass the task's data file the run used, in its doc order"
        )


def _items_with_docs(
    path: Path, task: str, docs_file: Path, question_field: str | None
) -> list[RunItem]:
    """lmms-eval rows of a task as items, each with its doc rebuilt by doc_id from its file."""
    docs = read_docs_file(docs_file)
    items = []
    for line_no, row in lmms_rows(path):
        logged = row_item(row, task, path, line_no)
        doc = _doc_by_id(row["doc_id"], logged.source, docs, docs_file)
        logged = replace(logged, doc=doc)
        _check_question(logged, doc, question_field, docs_file)
        items.append(logged)
    return items


@dataclass(frozen=True)
class JudgeSamples:
    """The items of one samples file, with docs, for the judge; the harness that wrote it,
    and where lmms-eval docs were rebuilt from when that was not the folder given."""

    items: list[RunItem]
    harness: str
    notes: tuple[str, ...] = ()


def read_judge_samples(
    path: str | Path,
    *,
    data_dir: str | Path | None = None,
    docs_file: str | Path | None = None,
    question_field: str | None = None,
) -> JudgeSamples:
    """The items of one lm-eval or lmms-eval samples file, each with its doc.

    lmms-eval rows of AQUA tasks are rebuilt from the released files (`data_dir`, else the
    one the run recorded when its file hashes as recorded; a note says so) and checked like
    every reader of runs checks them; other tasks' from `docs_file`, whose doc i must be the
    task's doc i (the logged prompt must hold its question field, when it has one).
    """
    path = Path(path)
    if not is_lmms_samples(path):
        return JudgeSamples(read_samples_file(path), HARNESS_LM_EVAL)
    match = LMMS_SAMPLES_NAME.match(path.name)
    task = match.group("name") if match else None
    if docs_file is None and task is not None and choice_task(task) is not None:
        _, items, notes = read_samples_items(path, data_dir=data_dir)
        return JudgeSamples(items, HARNESS_LMMS_EVAL, tuple(notes))
    if docs_file is None:
        raise ValueError(
            f"{path}: an lmms-eval log (rows carry no doc); pass --docs, the task's data file "
            "with its docs in the task's order (JSON list or JSON Lines)"
            + ("" if task else ", and keep lmms-eval's file name <stamp>_samples_<task>.jsonl")
        )
    items = _items_with_docs(path, task or path.stem, Path(docs_file), question_field)
    return JudgeSamples(items, HARNESS_LMMS_EVAL)


def orca_records(
    items: Iterable[RunItem],
    settings: OrcaMetricSettings | None,
    filter_name: str | None = None,
) -> list[dict[str, Any]]:
    """orca score records for the items of one filter (settings None: the doc-less form)."""
    items = list(items)
    filters = list(dict.fromkeys(i.filter for i in items))
    if filter_name is None:
        if len(filters) > 1:
            raise ValueError(f"samples have several filters ({', '.join(filters)}); pick --filter")
        filter_name = filters[0] if filters else "none"
    elif filter_name not in filters:
        raise ValueError(f"no samples for filter {filter_name!r} (have: {', '.join(filters)})")
    records = []
    for index, item in enumerate(i for i in items if i.filter == filter_name):
        if item.target is None:
            raise ValueError(
                f"{item.source}: logs no 'target' (the reference the judge compares with)"
            )
        record = judge_inputs(
            settings,
            reference=item.target,
            candidate=item.reply,
            doc=item.doc,
            index=index,
            prompt=item.prompt,
        )
        record["id"] = record["id"] if record["id"] is not None else str(index)
        records.append(record)
    return records
