"""lm-eval samples (e.g. from --predict_only) as orca-score input (behind `orca-lm-eval-items`).

Each sample becomes the record `metric: orca` would have judged in the run: the same doc
fields, reference and filtered reply, with the same id, so `orca-score` on the output gives
the numbers of judging in the run.

lmms-eval rows carry no doc, only its index (`doc_id`): their docs are rebuilt from a data
source in the task's doc order, the released files for AQUA tasks (`data_dir`, checked as
`aqua-score` checks them) and the task's own data file for any other task (`docs_file`).
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from aqua_tasks.core.data import load_json_file
from aqua_tasks.runs.discovery import (
    LMMS_SAMPLES_NAME,
    evaluation_results,
    find_outputs,
    first_row,
    is_lmms_row,
    iter_jsonl,
    recorded_metadata,
)
from aqua_tasks.runs.lmms_eval_logs import read_lmms_samples_file, task_setting
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
    docs = load_json_file(path)
    if not isinstance(docs, list):
        raise ValueError(f"{path}: expected a JSON list of docs (or a .jsonl file)")
    return docs


def _doc_by_id(row: dict[str, Any], where: str, docs: list[Any], docs_file: Path) -> dict:
    doc_id = row.get("doc_id")
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


def _check_question(
    row: dict[str, Any], where: str, doc: dict, field: str | None, docs_file: Path
) -> None:
    # The judge reads the rebuilt doc: a doc file in another order would pair replies with
    # other questions. The logged prompt holds the question wherever the task put it.
    name = field if field is not None else "question"
    question, prompt = doc.get(name), row.get("input")
    held = isinstance(question, str) and isinstance(prompt, str) and question in prompt
    if isinstance(question, str) and question and isinstance(prompt, str) and not held:
        raise ValueError(
            f"{where}: field 'input' does not hold doc {row['doc_id']}'s {name!r} from "
            f"{docs_file}; pass the task's data file the run used, in its doc order"
        )


def read_lmms_samples(
    path: str | Path,
    *,
    data_dir: str | Path | None = None,
    docs_file: str | Path | None = None,
    question_field: str | None = None,
    notes: list[str] | None = None,
) -> list[dict[str, Any]]:
    """lmms-eval rows as lm-eval samples, each with its doc rebuilt by doc_id.

    AQUA tasks are rebuilt from the released files (`data_dir`, else the one the run
    recorded when its file hashes as recorded; `notes` then gets a line saying so) and
    checked like every reader of runs checks them; other tasks from `docs_file`, whose doc i
    must be the task's doc i (the logged prompt must hold its question field, when it has one).
    """
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    match = LMMS_SAMPLES_NAME.match(path.name)
    task = match.group("name") if match else None
    if docs_file is None and task is not None and task_setting(task) is not None:
        # The results file of the same evaluation records the data folder and its hash.
        results_path = path.with_name(f"{match.group('stamp')}_results.json")
        files = find_outputs(results_path if results_path.is_file() else path)
        (samples_file,) = [f for f in files.samples if f.path == path]
        results = evaluation_results(files, samples_file)
        read = read_lmms_samples_file(
            path,
            task,
            data_dir=data_dir,
            metadata=recorded_metadata(files, samples_file),
            recorded_in=str(results.path) if results is not None else None,
        )
        items = read.items
        if read.note and notes is not None:
            notes.append(read.note)
        rows = {line: row for line, row in iter_jsonl(path)}
        return [
            {**rows[i.line], "doc": dict(i.doc), "filtered_resps": [i.reply], "filter": "none"}
            for i in items
        ]
    if docs_file is None:
        raise ValueError(
            f"{path}: an lmms-eval log (rows carry no doc); pass --docs, the task's data file "
            "with its docs in the task's order (JSON list or JSON Lines)"
            + ("" if task else ", and keep lmms-eval's file name <stamp>_samples_<task>.jsonl")
        )
    docs_file = Path(docs_file)
    docs = read_docs_file(docs_file)
    samples = []
    for line_no, row in iter_jsonl(path):
        where = f"{path}:{line_no}"
        if not is_lmms_row(row):
            raise ValueError(
                f"{where}: not an lmms-eval sample row (expected doc_id, target and "
                "filtered_resps, and no doc)"
            )
        doc = _doc_by_id(row, where, docs, docs_file)
        _check_question(row, where, doc, question_field, docs_file)
        reply = row["filtered_resps"]
        samples.append(
            {**row, "doc": doc, "filtered_resps": [reply] if isinstance(reply, str) else reply}
        )
    return samples


def read_samples(path: str | Path) -> list[dict[str, Any]]:
    """The samples of one lm-eval `samples_<task>_<time>.jsonl` file."""
    path = Path(path)
    if not path.is_file():
        raise ValueError(f"{path}: no such file")
    samples = []
    for line_no, sample in iter_jsonl(path):
        if not isinstance(sample, dict) or "doc" not in sample or "target" not in sample:
            raise ValueError(f"{path}:{line_no}: not an lm-eval sample (no doc/target)")
        samples.append(sample)
    return samples


def prompt_of(sample: dict[str, Any]) -> str | None:
    """The prompt lm-eval sent for a sample (its first request's context), if recorded.

    lmms-eval logs it as `input`.
    """
    if isinstance(sample.get("input"), str) and "arguments" not in sample:
        return sample["input"]
    arguments = sample.get("arguments")
    if isinstance(arguments, dict):
        first = arguments.get("gen_args_0")
        if isinstance(first, dict) and isinstance(first.get("arg_0"), str):
            return first["arg_0"]
    return None


def items_from_samples(
    samples: Iterable[dict[str, Any]],
    settings: OrcaMetricSettings | None,
    filter_name: str | None = None,
) -> list[dict[str, Any]]:
    """orca-score records for the samples of one filter (settings None: the doc-less form)."""
    samples = list(samples)
    filters = list(dict.fromkeys(s.get("filter", "none") for s in samples))
    if filter_name is None:
        if len(filters) > 1:
            raise ValueError(f"samples have several filters ({', '.join(filters)}); pick --filter")
        filter_name = filters[0] if filters else "none"
    elif filter_name not in filters:
        raise ValueError(f"no samples for filter {filter_name!r} (have: {', '.join(filters)})")
    items = []
    for index, sample in enumerate(s for s in samples if s.get("filter", "none") == filter_name):
        replies = sample.get("filtered_resps") or [""]
        record = judge_inputs(
            settings,
            reference=sample["target"],
            candidate=replies[0],
            doc=sample["doc"],
            index=index,
            prompt=prompt_of(sample),
        )
        record["id"] = record["id"] if record["id"] is not None else str(index)
        items.append(record)
    return items
