"""A saved run, read once: its items with their replies, from every supported source.

Sources: an lm-eval output folder (`results_*.json`, `samples_*.jsonl` written with
`--log_samples`, `orca_*.jsonl` written by `metric: orca`), an lmms-eval one
(`<stamp>_results.json`, `<stamp>_samples_<task>.jsonl`), one samples file, and the
AQUA-Bench authors' results JSON (a file, or a folder of them). `find_outputs` says which
files of a path make the run and which harness wrote them; `read_run` reads them into one
`Run` with one reader per kind of file. lmms-eval logs no docs: their items are rebuilt from
the released data by doc id (`aqua_tasks.runs.lmms_eval_logs`), which needs the data folder.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from aqua_tasks.core.data import (
    TRACKS,
    AquaDataError,
    AquaItem,
    detect_variant,
    entry_track,
    load_json_file,
    name_track,
    parse_item,
    task_name,
)
from aqua_tasks.core.docs import audio_enabled, doc_to_item, is_aqua_doc
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, rescoring_notice
from aqua_tasks.core.manifest import MANIFEST_FIELDS
from aqua_tasks.core.scoring import Verdict, score_reply
from aqua_tasks.runs.lmms_eval_logs import (
    HARNESS_AUTHORS,
    HARNESS_LM_EVAL,
    HARNESS_LMMS_EVAL,
    LMMS_RESULTS_NAME,
    LMMS_SAMPLES_NAME,
    LMMS_STAMP_FORMAT,
    LmmsLogError,
    check_recorded_data,
    check_row,
    content_hash,
    is_lmms_row,
    rebuilt_doc,
    row_doc_id,
    row_prompt_hash,
    row_reply,
    task_data,
    task_setting,
)
from eval_common.cli import parse_bool

# lm-eval names its files <kind>_<...>_<local time>, the time as isoformat() with '-' for ':'.
# lmms-eval names its files <local time>_<kind>..., the time as YYYYMMDD_HHMMSS.
STAMP_FORMATS = ("%Y-%m-%dT%H-%M-%S.%f", "%Y-%m-%dT%H-%M-%S", LMMS_STAMP_FORMAT)
RESULTS_NAME = re.compile(r"^results_(?P<stamp>.+)\.json$")
# The task may hold '_'; the time stamp never does.
SAMPLES_NAME = re.compile(r"^samples_(?P<name>.+)_(?P<stamp>[^_]+)\.jsonl$")
# orca_pending_* (judge inputs of a failed pass) are not per-item results.
JUDGE_NAME = re.compile(
    r"^orca_(?!pending_)(?P<name>.+)_(?P<stamp>\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d(?:\.\d+)?)\.jsonl$"
)
# Model arguments that name the model itself, in the order they are preferred for a label.
# (kind, harness, file-name pattern, glob) of every file a harness writes for a run.
OUTPUT_NAMES: tuple[tuple[str, str, re.Pattern, str], ...] = (
    ("results", HARNESS_LM_EVAL, RESULTS_NAME, "results_*.json"),
    ("samples", HARNESS_LM_EVAL, SAMPLES_NAME, "samples_*.jsonl"),
    ("judge", HARNESS_LM_EVAL, JUDGE_NAME, "orca_*.jsonl"),
    ("results", HARNESS_LMMS_EVAL, LMMS_RESULTS_NAME, "*_results.json"),
    ("samples", HARNESS_LMMS_EVAL, LMMS_SAMPLES_NAME, "*_samples_*.jsonl"),
)
NAME_ARGS: tuple[str, ...] = ("pretrained", "model", "model_name", "engine")
SHOWN_IDS = 5


class RunError(AquaDataError):
    """A run cannot be read as asked; the message is one line naming the file, line or field."""


class AmbiguousRunError(RunError):
    """A folder holds the outputs of several runs in different sub-folders (e.g. two models)."""


class DuplicateItemError(RunError):
    """The same item of a task appears more than once in a run."""


class TrackMismatchError(RunError):
    """A file's name, its content or the track asked for disagree on the track."""


# --- files ---------------------------------------------------------------------------------


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; RunError naming file:line when malformed."""
    path = Path(path)
    try:
        with path.open(encoding="utf-8") as handle:
            lines = list(enumerate(handle, 1))
    except (OSError, UnicodeDecodeError) as error:
        raise RunError(f"{path}: cannot read ({error})") from None
    for line_no, line in lines:
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError as error:
            raise RunError(f"{path}:{line_no}: malformed JSON ({error.msg})") from None
        yield line_no, value


def read_json(path: str | Path) -> Any:
    """A JSON file's content; RunError naming the file when unreadable or malformed."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as error:
        raise RunError(f"{path}: malformed JSON ({error.msg}, line {error.lineno})") from None
    except (OSError, UnicodeDecodeError) as error:
        raise RunError(f"{path}: cannot read ({error})") from None


def stamp_time(stamp: str) -> float | None:
    """Seconds since the epoch of an lm-eval file-name time stamp (local time), or None."""
    for fmt in STAMP_FORMATS:
        try:
            return datetime.strptime(stamp, fmt).timestamp()
        except ValueError:
            continue
    return None


@dataclass(frozen=True)
class OutputFile:
    """One file a harness wrote for a run, with when it was written and how that is known."""

    path: Path
    kind: str  # "results", "samples" or "judge"
    name: str  # samples: the task; judge: task and filter; results: ""
    stamp: str
    time: float
    time_from: str  # "recorded" (in the file or its results file), "file name" or "mtime"


def output_file(path: Path, kind: str, name: str, stamp: str, recorded: object) -> OutputFile:
    """An OutputFile timed by the recorded time, else its name's time stamp, else its mtime."""
    if isinstance(recorded, (int, float)) and not isinstance(recorded, bool):
        return OutputFile(path, kind, name, stamp, float(recorded), "recorded")
    from_name = stamp_time(stamp)
    if from_name is not None:
        return OutputFile(path, kind, name, stamp, from_name, "file name")
    return OutputFile(path, kind, name, stamp, path.stat().st_mtime, "mtime")


def oldest_first(files: Iterable[OutputFile]) -> list[OutputFile]:
    """Files by time; equal times by time stamp, then path, so the order is deterministic."""
    return sorted(files, key=lambda f: (f.time, f.stamp, str(f.path)))


def newest(files: Iterable[OutputFile]) -> dict[str, OutputFile]:
    """The newest file per name."""
    return {f.name: f for f in oldest_first(files)}


@dataclass(frozen=True)
class RunFiles:
    """The files that make a run: one harness's outputs (newest per task) or authors' results.

    `harness` names what wrote them: "lm-eval", "lmms-eval" or "authors' results".
    """

    path: Path
    folder: Path | None = None
    results: tuple[OutputFile, ...] = ()  # every results file, oldest first
    samples: tuple[OutputFile, ...] = ()  # the newest per task
    judges: tuple[OutputFile, ...] = ()  # the newest per judged task and filter
    authors: tuple[Path, ...] = ()
    results_payload: Mapping[str, Any] | None = None  # content of the newest results file
    results_payloads: Mapping[Path, Any] = field(default_factory=dict)  # every one, by path
    harness: str = HARNESS_LM_EVAL

    @property
    def newest_results(self) -> OutputFile | None:
        """The newest results file, or None."""
        return self.results[-1] if self.results else None


@dataclass(frozen=True)
class Found:
    """A file whose name one harness gives its outputs."""

    kind: str
    harness: str
    path: Path
    match: re.Match


def name_match(path: Path) -> Found | None:
    """What a file's name says it is (kind and harness), or None for other files."""
    for kind, harness, pattern, _ in OUTPUT_NAMES:
        match = pattern.match(path.name)
        if match:
            return Found(kind, harness, path, match)
    return None


def _harness_files(folder: Path) -> list[Found]:
    found = []
    for _, _, _, glob in OUTPUT_NAMES:
        for path in folder.rglob(glob):
            named = name_match(path)
            if named is not None and path.is_file():
                found.append(named)
    # A name can match several globs (e.g. `*_results.json` and `results_*.json`): once.
    return list({f.path: f for f in found}.values())


def _one_folder(path: Path, found: Sequence[Found]) -> Path:
    folders = sorted({f.path.parent for f in found})
    if len(folders) > 1:
        shown = ", ".join(str(f.relative_to(path)) for f in folders)
        raise AmbiguousRunError(
            f"{path}: holds the outputs of {len(folders)} runs in different folders ({shown}); "
            "point at the one to use"
        )
    return folders[0]


def _one_harness(path: Path, found: Sequence[Found]) -> str:
    harnesses = sorted({f.harness for f in found})
    if len(harnesses) > 1:
        examples = ", ".join(next(f.path.name for f in found if f.harness == h) for h in harnesses)
        raise AmbiguousRunError(
            f"{path}: holds outputs of both {' and '.join(harnesses)} (e.g. {examples}); "
            "keep each harness's run in its own folder and point at one"
        )
    return harnesses[0]


def _timed(found: Sequence[Found], dates: Mapping[tuple[Path, str], object]) -> dict:
    timed: dict[str, list[OutputFile]] = {"results": [], "samples": [], "judge": []}
    for f in found:
        stamp = f.match.group("stamp")
        name = f.match.groupdict().get("name") or ""
        # Samples carry no time; the results file of the same evaluation records it.
        recorded = dates.get((f.path.parent, stamp)) if f.kind != "judge" else None
        timed[f.kind].append(output_file(f.path, f.kind, name, stamp, recorded))
    return timed


def _recorded_dates(results: Iterable[Found]) -> tuple[dict, dict[Path, Any]]:
    dates, payloads = {}, {}
    for f in results:
        payload = read_json(f.path)
        payloads[f.path] = payload
        # lm-eval records the time as seconds; lmms-eval as its file-name stamp (then unused).
        dates[(f.path.parent, f.match.group("stamp"))] = (
            payload.get("date") if isinstance(payload, dict) else None
        )
    return dates, payloads


def _recorded_model(payload: object) -> tuple[str, str] | None:
    """(model, model_args) a results file records, or None when it records none."""
    config = payload.get("config") if isinstance(payload, Mapping) else None
    if not isinstance(config, Mapping) or "model" not in config:
        return None
    return str(config.get("model")), json.dumps(config.get("model_args"), sort_keys=True)


def _one_model(
    path: Path, samples: Iterable[OutputFile], results: Sequence[OutputFile], payloads: Mapping
) -> None:
    """Refuse newest-per-task samples that come from evaluations of different models.

    Reruns of some tasks into the same folder are combined (each task's newest samples), but
    lmms-eval writes the runs of every model without model_args into the output folder
    itself: there, the newest samples per task can belong to different models.
    """
    by_stamp = {(r.path.parent, r.stamp): _recorded_model(payloads.get(r.path)) for r in results}
    models: dict[tuple[str, str], str] = {}
    for f in samples:
        model = by_stamp.get((f.path.parent, f.stamp))
        if model is not None:
            models.setdefault(model, f.path.name)
    if len(models) > 1:
        shown = ", ".join(f"{name}: {model} {args}" for (model, args), name in models.items())
        raise AmbiguousRunError(
            f"{path}: its newest samples per task come from runs of different models ({shown}); "
            "keep each model's run in its own --output_path, or point at one samples file"
        )


def _files_of(path: Path, folder: Path, found: Sequence[Found]) -> RunFiles:
    harness = _one_harness(path, found)
    dates, payloads = _recorded_dates(f for f in found if f.kind == "results")
    timed = _timed(found, dates)
    results = tuple(oldest_first(timed["results"]))
    samples = tuple(newest(timed["samples"]).values())
    _one_model(path, samples, results, payloads)
    return RunFiles(
        path=path,
        folder=folder,
        results=results,
        samples=samples,
        judges=tuple(newest(timed["judge"]).values()),
        results_payload=payloads[results[-1].path] if results else None,
        results_payloads=payloads,
        harness=harness,
    )


def _first_row(path: Path) -> object:
    for _, row in iter_jsonl(path):
        return row
    return None


def find_outputs(path: str | Path) -> RunFiles:
    """The files of the run at a path; refuses a folder holding several runs or harnesses."""
    path = Path(path)
    if not path.exists():
        raise RunError(f"{path}: no such file or directory")
    if path.is_dir():
        found = _harness_files(path)
        if found:
            return _files_of(path, _one_folder(path, found), found)
        authors = sorted(p for p in path.glob("*.json") if p.is_file())
        return RunFiles(path=path, authors=tuple(authors), harness=HARNESS_AUTHORS)
    named = name_match(path)
    if named is not None:
        found = [named]
        if named.kind == "results":  # its evaluation's samples, written beside it
            stamp = named.match.group("stamp")
            for sibling in path.parent.iterdir():
                other = name_match(sibling)
                if (
                    other is not None
                    and other.kind == "samples"
                    and other.harness == named.harness
                    and other.match.group("stamp") == stamp
                ):
                    found.append(other)
        return _files_of(path, path.parent, found)
    if path.suffix == ".jsonl":  # samples under another name: the task comes from the docs
        harness = HARNESS_LMMS_EVAL if is_lmms_row(_first_row(path)) else HARNESS_LM_EVAL
        return RunFiles(
            path=path,
            folder=path.parent,
            samples=(output_file(path, "samples", "", "", None),),
            harness=harness,
        )
    return RunFiles(path=path, authors=(path,), harness=HARNESS_AUTHORS)


# --- items ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunItem:
    """One item of a run with the model's reply, where it was read and what was logged with it.

    `item` is None for a sample of a non-AQUA task (kept for its doc and hashes); `source`
    names the place for messages ("file:line" or "file: entry N"), `file` and `line` locate it.
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

    @property
    def key(self) -> tuple[str, int]:
        """(task, item id) of an AQUA item, else (task, lm-eval doc_id)."""
        return (self.task, self.item.id if self.item is not None else int(self.doc_id or 0))


def _reply_text(value: object, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and len(value) == 1:
        return _reply_text(value[0], where)
    raise RunError(f"{where}: reply must be a string, got {type(value).__name__}")


def _sample_reply(sample: Mapping, where: str) -> str:
    for key in ("filtered_resps", "resps"):
        value = sample.get(key)
        if isinstance(value, list) and value:
            return _reply_text(value[0], where)
    raise RunError(f"{where}: sample has neither 'filtered_resps' nor 'resps'")


def task_track(task: str) -> str | None:
    """The track a task name ends in ('aqua_animal', 'aqua-cot_music'), or None."""
    named = [part for part in re.split(r"[_\-]", task) if part in TRACKS]
    return named[-1] if named else None


def item_manifest(doc: Mapping, recorded: Mapping | None = None) -> dict[str, str | None]:
    """An AQUA item's run manifest: its doc's fields, the rest from its task's recorded one.

    Docs written by 0.1.0 carry the whole manifest; later ones only `manifest.DOC_FIELDS`,
    the rest being recorded once per task in the results file (`recorded`). A field neither
    holds is None, i.e. unknown (e.g. a samples file read without its results file).
    """
    recorded = recorded if isinstance(recorded, Mapping) else {}
    return {k: doc[k] if k in doc else recorded.get(k) for k in MANIFEST_FIELDS}


def evaluation_results(files: RunFiles, samples: OutputFile) -> OutputFile | None:
    """The results file of a samples file's evaluation (same folder and time stamp), or None."""
    for result in files.results:
        if (result.path.parent, result.stamp) == (samples.path.parent, samples.stamp):
            return result
    return None


def recorded_metadata(files: RunFiles, samples: OutputFile) -> dict[str, Mapping[str, Any]]:
    """Per task, the config `metadata` recorded by the results file of a samples file's run."""
    result = evaluation_results(files, samples)
    payload = files.results_payloads.get(result.path) if result is not None else None
    configs = payload.get("configs") if isinstance(payload, Mapping) else None
    if not isinstance(configs, Mapping):
        return {}
    found = {}
    for task, config in configs.items():
        metadata = config.get("metadata") if isinstance(config, Mapping) else None
        if isinstance(metadata, Mapping):
            found[task] = metadata
    return found


def recorded_manifests(files: RunFiles, samples: OutputFile) -> dict[str, Mapping[str, Any]]:
    """Per task, the `aqua_manifest` recorded by the results file of a samples file's evaluation."""
    return {
        task: metadata["aqua_manifest"]
        for task, metadata in recorded_metadata(files, samples).items()
        if isinstance(metadata.get("aqua_manifest"), Mapping)
    }


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
    task = task or task_name(item.track, item.variant, doc.get("prompt_style") or "plain")
    return RunItem(
        task=task,
        item=item,
        reply=_sample_reply(sample, where),
        source=where,
        extractor=doc.get("extractor"),
        exclude_defective=bool(doc.get("exclude_defective")),
        manifest=item_manifest(doc, manifests.get(task)),
        **logged,
    )


def _other_sample(sample: Mapping, task: str, where: str, **logged: Any) -> RunItem:
    replies = sample.get("filtered_resps")
    reply = replies[0] if isinstance(replies, list) and replies else None
    return RunItem(task, None, reply if isinstance(reply, str) else "", where, **logged)


def _check_tracks(path: Path, task: str | None, items: Sequence[RunItem]) -> None:
    tracks = sorted({i.item.track for i in items if i.item is not None})
    if len(tracks) > 1:
        raise TrackMismatchError(f"{path}: holds docs of several tracks ({', '.join(tracks)})")
    named = task_track(task) if task else None
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
        }
        if aqua:
            items.append(_aqua_sample(sample, task, where, manifests or {}, **logged))
        else:
            items.append(_other_sample(sample, task or path.stem, where, **logged))
    _check_tracks(path, task, items)
    return items


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


def read_lmms_samples_file(
    path: str | Path,
    task: str | None = None,
    *,
    data_dir: str | Path | None,
    metadata: Mapping[str, Mapping] | None = None,
    recorded_in: str | None = None,
) -> list[RunItem]:
    """The items of one lmms-eval samples file, rebuilt by doc id from the released data.

    `metadata` is the per-task config metadata its results file (`recorded_in`) holds
    (`recorded_metadata`). Every row's doc id, target and input are checked against the
    rebuilt item; a data file other than the one the results record is refused.
    """
    path = Path(path)
    match = LMMS_SAMPLES_NAME.match(path.name)
    task = task or (match.group("name") if match else None)
    if task is None:
        raise RunError(
            f"{path}: lmms-eval rows name no task; keep lmms-eval's file name "
            "<stamp>_samples_<task>.jsonl"
        )
    rows = list(iter_jsonl(path))
    for line_no, row in rows:
        if not is_lmms_row(row):
            raise RunError(
                f"{path}:{line_no}: not an lmms-eval sample row (expected doc_id, target and "
                "filtered_resps, and no doc)"
            )
    if task_setting(task) is None:  # another task's rows: kept for their ids and replies
        items = []
        for line_no, row in rows:
            where = f"{path}:{line_no}"
            try:
                reply = row_reply(row, where)
            except LmmsLogError:  # e.g. a multiple-choice task's list of scores: no text reply
                reply = ""
            doc_id = row.get("doc_id")
            items.append(
                RunItem(
                    task,
                    None,
                    reply,
                    where,
                    file=path,
                    line=line_no,
                    doc_id=doc_id if isinstance(doc_id, int) else None,
                    prompt_hash=row_prompt_hash(row),
                )
            )
        return items
    task_metadata = (metadata or {}).get(task) or {}
    recorded = task_metadata.get("aqua_manifest")
    recorded = recorded if isinstance(recorded, Mapping) else {}
    extractor, exclude = _lmms_settings(task, task_metadata, recorded_in or str(path))
    try:
        data = task_data(task, data_dir, task_metadata.get("data_dir"))
    except LmmsLogError as error:
        raise RunError(f"{path}: {error}") from None
    known = {**recorded, "data_file": data.data_file.name, "data_sha256": data.data_sha256}
    try:
        check_recorded_data(data, recorded, recorded_in or str(path))
        items = []
        for line_no, row in rows:
            where = f"{path}:{line_no}"
            doc_id = row_doc_id(row, where, data)
            item = data.items[doc_id]
            check_row(row, where, item, data)
            doc = rebuilt_doc(item, data, extractor=extractor, exclude_defective=exclude)
            items.append(
                RunItem(
                    task=task,
                    item=item,
                    reply=row_reply(row, where),
                    source=where,
                    extractor=extractor,
                    exclude_defective=exclude,
                    manifest=item_manifest(doc, known),
                    file=path,
                    line=line_no,
                    doc_id=doc_id,
                    prompt_hash=row_prompt_hash(row, doc),
                    doc_hash=content_hash(doc),
                    doc=doc,
                )
            )
    except LmmsLogError as error:
        raise RunError(str(error)) from None
    return items


def _entry_tracks(path: Path, entries: list, track: str | None) -> list[str]:
    """The track of every entry: as asked, else as the file name or the audio paths say."""
    if track is not None:
        return [track] * len(entries)
    told = [entry_track(e) for e in entries]
    tracks = sorted({t for t in told if t is not None})
    named = name_track(path.name)
    if named is not None:
        if tracks and tracks != [named]:
            index = next(i for i, t in enumerate(told) if t not in (None, named))
            raise TrackMismatchError(
                f"{path}: the file name says track {named} but entry {index}'s audio path says "
                f"{told[index]}; pass --track to override"
            )
        return [named] * len(entries)
    if not tracks:
        raise RunError(
            f"{path}: cannot tell the track from the file name or audio paths; pass --track"
        )
    if len(tracks) == 1:
        return [tracks[0]] * len(entries)
    unknown = [i for i, t in enumerate(told) if t is None]
    if unknown:  # a file mixing tracks is split by track, which needs every entry's track
        raise TrackMismatchError(
            f"{path}: mixes tracks ({', '.join(tracks)}) and entry {unknown[0]}'s audio path "
            "tells none; split the file per track"
        )
    return [t for t in told if t is not None]


def read_authors_results(path: str | Path, track: str | None = None) -> list[RunItem]:
    """Entries of the released JSON format with the reply under `response`, split by track."""
    path = Path(path)
    entries = load_json_file(path)
    if not isinstance(entries, list) or not entries:
        raise RunError(f"{path}: expected a non-empty JSON list of result entries")
    for index, entry in enumerate(entries):
        if not isinstance(entry, dict):
            raise RunError(f"{path}: entry {index}: expected a JSON object")
    tracks = _entry_tracks(path, entries, track)
    variants = {
        t: detect_variant(
            [e.get("options", []) for e, et in zip(entries, tracks, strict=True) if et == t],
            path.name,
        )
        for t in set(tracks)
    }
    items = []
    for index, (entry, entry_track_) in enumerate(zip(entries, tracks, strict=True)):
        where = f"{path}: entry {index}"
        variant = variants[entry_track_]
        item = parse_item(entry, track=entry_track_, variant=variant, where=where)
        if "response" not in entry:
            raise RunError(f"{where}: missing key 'response' (the model's reply)")
        items.append(
            RunItem(
                task=task_name(entry_track_, variant),
                item=item,
                reply=_reply_text(entry["response"], where),
                source=where,
                file=path,
                doc_id=index,
            )
        )
    return items


def refuse_duplicates(items: Iterable[RunItem]) -> None:
    """DuplicateItemError naming the ids when an item of a task appears more than once."""
    seen: dict[tuple, RunItem] = {}
    repeated: dict[str, list[RunItem]] = {}
    for it in items:
        # AQUA items are one per id whatever the filter; other tasks log a sample per filter.
        key = it.key if it.item is not None else (*it.key, it.filter)
        if key in seen:
            repeated.setdefault(it.task, []).append(it)
        else:
            seen[key] = it
    if repeated:
        task, dups = next(iter(repeated.items()))
        ids = ", ".join(str(d.key[1]) for d in dups[:SHOWN_IDS])
        more = " …" if len(dups) > SHOWN_IDS else ""
        raise DuplicateItemError(
            f"{dups[0].source}: {task} has {len(dups)} items more than once (id {ids}{more}); "
            "a run holds each item once"
        )


# --- runs ----------------------------------------------------------------------------------


def _args_dict(model_args: object) -> dict[str, str]:
    if isinstance(model_args, Mapping):
        return {str(k): str(v) for k, v in model_args.items()}
    if isinstance(model_args, str) and model_args.strip():
        pairs = (part.partition("=") for part in model_args.split(","))
        return {k.strip(): v.strip() for k, _, v in pairs if k.strip()}
    return {}


def _short_path(value: str) -> str:
    # Local checkpoints and reply folders are named by their last part; hub ids are kept whole.
    return Path(value.rstrip("/")).name if value.startswith(("/", ".", "~")) else value


def run_label(config: Mapping) -> str:
    """A readable model label from an lm-eval results `config` (model and model_args)."""
    model = str(config.get("model") or "model")
    args = _args_dict(config.get("model_args"))
    for key in NAME_ARGS:
        if args.get(key):
            return _short_path(args[key])
    if not args:
        return model
    shown = ", ".join(f"{k}={_short_path(v)}" for k, v in sorted(args.items()))
    return f"{model} ({shown})"


@dataclass(frozen=True)
class Run:
    """A saved run: every item with its reply, and what its newest lm-eval results record."""

    path: Path
    items: tuple[RunItem, ...]
    files: RunFiles

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

    def task_metadata(self) -> dict[str, Mapping[str, Any]]:
        """Per task, the `metadata` its config recorded in the results."""
        configs = self.results.get("configs") or {}
        return {task: (cfg or {}).get("metadata") or {} for task, cfg in configs.items()}

    def audio(self) -> dict[str, bool]:
        """Per task recorded in the results, whether the run fed audio."""
        return {task: audio_enabled(meta) for task, meta in self.task_metadata().items()}


def read_run(
    path: str | Path, *, track: str | None = None, data_dir: str | Path | None = None
) -> Run:
    """Every item of the run at a path, each file read once; typed errors on bad input.

    `data_dir` (the released AQUA-Bench files) is needed for lmms-eval logs only, whose items
    are rebuilt from it; other runs carry their items and ignore it.
    """
    files = find_outputs(path)
    items: list[RunItem] = []
    for sample_file in files.samples:
        if files.harness == HARNESS_LMMS_EVAL:
            result = evaluation_results(files, sample_file)
            items.extend(
                read_lmms_samples_file(
                    sample_file.path,
                    sample_file.name or None,
                    data_dir=data_dir,
                    metadata=recorded_metadata(files, sample_file),
                    recorded_in=str(result.path) if result is not None else None,
                )
            )
            continue
        items.extend(
            read_samples_file(
                sample_file.path,
                sample_file.name or None,
                recorded_manifests(files, sample_file),
            )
        )
    if track is not None:
        differing = sorted({i.item.track for i in items if i.item is not None} - {track})
        if differing:
            raise TrackMismatchError(
                f"{files.path}: --track {track} but the logged docs are of track "
                f"{', '.join(differing)}"
            )
    for authors_file in files.authors:
        items.extend(read_authors_results(authors_file, track))
    refuse_duplicates(items)
    return Run(path=Path(path), items=tuple(items), files=files)


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


def rescoring_notices(items: Iterable[RunItem]) -> list[str]:
    """One line per recorded extractor (name, version) that the current code re-scores."""
    recorded = {
        (i.extractor or DEFAULT_EXTRACTOR, i.manifest.get("extractor_version"))
        for i in items
        if i.item is not None
    }
    notices = (rescoring_notice(name, version) for name, version in sorted(recorded, key=str))
    return [n for n in notices if n]


def score_items(
    items: Sequence[RunItem], *, extractor: str | None = None, exclude_defective: bool = False
) -> list[Verdict]:
    """Verdicts of AQUA items; each item's recorded extractor is used unless one is given."""
    return [
        score_reply(
            i.item,
            i.reply,
            extractor=extractor or i.extractor or DEFAULT_EXTRACTOR,
            exclude_defective=exclude_defective or i.exclude_defective,
        )
        for i in items
    ]
