"""Which files of a path make a saved run, which harness wrote them, and when.

An lm-eval output folder holds `results_*.json`, `samples_*.jsonl` (written with
`--log_samples`) and `orca_*.jsonl` (written by `metric: orca`); an lmms-eval one
`<stamp>_results.json` and `<stamp>_samples_<task>.jsonl`; anything else is the AQUA-Bench
authors' results JSON (a file, or a folder of them). `find_outputs` says which of them make
the run: one harness's, in one folder, the newest samples per task.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

from aqua_tasks.errors import AmbiguousRunError, RunError
from eval_common.inputs import iter_json_lines
from eval_common.inputs import read_json as read_json_file

HARNESS_LM_EVAL = "lm-eval"
HARNESS_LMMS_EVAL = "lmms-eval"
HARNESS_AUTHORS = "authors' results"

SHOWN_FILES = 4
LMMS_STAMP_FORMAT = "%Y%m%d_%H%M%S"
LMMS_RESULTS_NAME = re.compile(r"^(?P<stamp>\d{8}_\d{6})_results\.json$")
LMMS_SAMPLES_NAME = re.compile(r"^(?P<stamp>\d{8}_\d{6})_samples_(?P<name>.+)\.jsonl$")
# Keys only lmms-eval's results file has (lm-eval's has `lm_eval_version` and no such key).
LMMS_RESULTS_KEYS = ("lmms_eval_version",)
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
# The per-item judge files of `metric: orca` are named alike under both harnesses: they tell
# no harness, and go with the results and samples beside them.
ANY_HARNESS = ""
# (kind, harness, file-name pattern, glob) of every file a harness writes for a run.
OUTPUT_NAMES: tuple[tuple[str, str, re.Pattern, str], ...] = (
    ("results", HARNESS_LM_EVAL, RESULTS_NAME, "results_*.json"),
    ("samples", HARNESS_LM_EVAL, SAMPLES_NAME, "samples_*.jsonl"),
    ("judge", ANY_HARNESS, JUDGE_NAME, "orca_*.jsonl"),
    ("results", HARNESS_LMMS_EVAL, LMMS_RESULTS_NAME, "*_results.json"),
    ("samples", HARNESS_LMMS_EVAL, LMMS_SAMPLES_NAME, "*_samples_*.jsonl"),
)


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """(line number, value) of each non-blank line; RunError naming file:line when malformed."""
    path = Path(path)
    try:
        rows = list(iter_json_lines(path, RunError))
    except OSError as error:
        raise RunError(f"{path}: cannot read ({error})") from None
    yield from rows


def read_json(path: str | Path) -> Any:
    """A JSON file's content; RunError naming the file when unreadable or malformed."""
    path = Path(path)
    try:
        return read_json_file(path, RunError)
    except OSError as error:
        raise RunError(f"{path}: cannot read ({error})") from None


def is_lmms_row(row: object) -> bool:
    """Whether a samples row is lmms-eval's: a doc_id, target and reply, but no doc."""
    return (
        isinstance(row, Mapping)
        and "doc" not in row
        and "doc_id" in row
        and "target" in row
        and "filtered_resps" in row
    )


def is_lmms_results(payload: object) -> bool:
    """Whether a results file's content was written by lmms-eval."""
    return isinstance(payload, Mapping) and any(k in payload for k in LMMS_RESULTS_KEYS)


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
    harnesses = sorted({f.harness for f in found} - {ANY_HARNESS})
    if not harnesses:  # judge files alone (a run without --log_samples): lm-eval's layout
        return HARNESS_LM_EVAL
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


# Model arguments that name the model itself, in the order they are preferred for a label.
NAME_ARGS: tuple[str, ...] = ("pretrained", "model", "model_name", "engine")


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


def recorded_config(payload: object) -> Mapping[str, Any] | None:
    """The `config` (model and model_args) a results file records, or None."""
    config = payload.get("config") if isinstance(payload, Mapping) else None
    return config if isinstance(config, Mapping) and "model" in config else None


def when(time: float) -> str:
    """A file time as local ISO date and time, to the second."""
    return datetime.fromtimestamp(time).isoformat(sep=" ", timespec="seconds")


@dataclass(frozen=True)
class Evaluation:
    """The samples files one evaluation wrote into a folder (one time stamp), and its model.

    `model` is None when no results file of the evaluation records it (e.g. it was deleted).
    """

    samples: tuple[OutputFile, ...]
    results: OutputFile | None
    model: tuple[str, str] | None  # (model, model_args as JSON)
    label: str | None

    def describe(self) -> str:
        """`file (model, date)` of the evaluation, for listings."""
        first = self.samples[0]
        more = f" +{len(self.samples) - 1} more" if len(self.samples) > 1 else ""
        return f"{first.path.name}{more} ({self.label or 'model not recorded'}, {when(first.time)})"


def _evaluations(
    samples: Iterable[OutputFile], results: Sequence[OutputFile], payloads: Mapping
) -> dict[tuple[Path, str], Evaluation]:
    by_stamp = {(r.path.parent, r.stamp): r for r in results}
    grouped: dict[tuple[Path, str], list[OutputFile]] = {}
    for f in oldest_first(samples):
        grouped.setdefault((f.path.parent, f.stamp), []).append(f)
    found = {}
    for key, files in grouped.items():
        result = by_stamp.get(key)
        config = recorded_config(payloads.get(result.path)) if result is not None else None
        model = None
        if config is not None:
            model = (str(config.get("model")), json.dumps(config.get("model_args"), sort_keys=True))
        label = run_label(config) if config is not None else None
        found[key] = Evaluation(tuple(files), result, model, label)
    return found


def _one_run(
    path: Path,
    every: Sequence[OutputFile],
    chosen: Iterable[OutputFile],
    results: Sequence[OutputFile],
    payloads: Mapping,
) -> None:
    """Refuse a folder whose samples cannot be told to be one model's run.

    Reruns of some tasks by the same model are combined (each task's newest samples), but
    lmms-eval writes the runs of every model without model_args into the output folder
    itself, and samples whose results file is gone name no model: combining those could pool
    the replies of different models into one figure.
    """
    evaluations = _evaluations(every, results, payloads)
    models = {e.model for e in evaluations.values() if e.model is not None}
    listed = "; ".join(e.describe() for e in evaluations.values())
    if len(models) > 1:
        raise AmbiguousRunError(
            f"{path}: holds runs of different models ({listed}); pass the results file of the "
            "one to use (its samples are read with it), or keep each model's run in its own "
            "--output_path"
        )
    used = {(f.path.parent, f.stamp) for f in chosen}
    unknown = [evaluations[k] for k in used if evaluations[k].model is None]
    if len(used) > 1 and unknown:
        raise AmbiguousRunError(
            f"{path}: would combine the samples of {len(used)} evaluations, and "
            f"{len(unknown)} of them have no results file to say which model wrote them "
            f"({listed}); pass one samples file, or restore the results files"
        )


def _files_of(path: Path, folder: Path, found: Sequence[Found]) -> RunFiles:
    harness = _one_harness(path, found)
    dates, payloads = _recorded_dates(f for f in found if f.kind == "results")
    timed = _timed(found, dates)
    results = tuple(oldest_first(timed["results"]))
    samples = tuple(newest(timed["samples"]).values())
    _one_run(path, timed["samples"], samples, results, payloads)
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


def same_evaluation(named: Found, kind: str) -> list[Found]:
    """The files of a kind the same harness wrote beside a file in the same evaluation."""
    stamp = named.match.group("stamp")
    return [
        other
        for other in map(name_match, named.path.parent.iterdir())
        if other is not None
        and other.kind == kind
        and other.harness == named.harness
        and other.match.group("stamp") == stamp
    ]


def first_row(path: str | Path) -> object:
    """The value of a JSON Lines file's first non-blank line, or None when it has none."""
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
        # A results file comes with its evaluation's samples, written beside it; a samples
        # file with its results file, which records the model and settings of its run.
        wanted = {"results": "samples", "samples": "results"}.get(named.kind)
        found += same_evaluation(named, wanted) if wanted else []
        return _files_of(path, path.parent, found)
    if path.suffix == ".jsonl":  # samples under another name: the task comes from the docs
        harness = HARNESS_LMMS_EVAL if is_lmms_row(first_row(path)) else HARNESS_LM_EVAL
        return RunFiles(
            path=path,
            folder=path.parent,
            samples=(output_file(path, "samples", "", "", None),),
            harness=harness,
        )
    return RunFiles(path=path, authors=(path,), harness=HARNESS_AUTHORS)


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


def _json_or_none(path: Path) -> object:
    try:
        return read_json(path)
    except RunError:  # e.g. JSON Lines under a .json name: read (and reported) as samples
        return None


def _is_results_payload(payload: object) -> bool:
    return isinstance(payload, Mapping) and "results" in payload and "configs" in payload


def _shown(paths: Sequence[Path]) -> str:
    more = " …" if len(paths) > SHOWN_FILES else ""
    return ", ".join(p.name for p in paths[:SHOWN_FILES]) + more


def samples_file_of(path: str | Path) -> Path:
    """The one samples file a path names: itself, or the only one of a run folder.

    A results file or a folder of several tasks' samples is refused with the files to pass
    instead (read as samples, a results file would be "malformed JSON").
    """
    path = Path(path)
    if not path.exists():
        raise RunError(f"{path}: no such file or directory")
    if path.is_dir():
        samples = [f.path for f in find_outputs(path).samples]
        if len(samples) == 1:
            return samples[0]
        if not samples:
            raise RunError(f"{path}: holds no samples files (written with --log_samples)")
        raise RunError(
            f"{path}: holds the samples of {len(samples)} tasks ({_shown(samples)}); pass one of "
            "these files"
        )
    named = name_match(path)
    if named is None or named.kind != "results":
        if path.suffix != ".json" or not _is_results_payload(_json_or_none(path)):
            return path
        siblings: list[Path] = []
    else:
        siblings = sorted(f.path for f in same_evaluation(named, "samples"))
    beside = f" (beside it: {_shown(siblings)})" if siblings else ""
    raise RunError(
        f"{path}: is a results file, not samples; pass its evaluation's samples file{beside} "
        "or the run folder"
    )
