"""Wiring one built task for the doc-aware `metric: orca` and `metric: llm_judge`, shared by
lm-eval and lmms-eval.

Both harnesses build a `ConfigurableTask` with the same layout (config.metric_list, the
private metric tables `eval_plugins.built_tasks` edits, a bound
`process_results(doc, results, ...)`). `wire` reads the task's orca entry, loads the judge
(failing before any generation), and replaces the built task's `process_results` so that
each doc's value carries the judge's inputs — question, reference, rationale, transcript,
reply — to the aggregation, which has no task handle (the compat modules label its values
with their task and filter). The wrapper is pure (it reads the doc and the reply and returns
a new dict): lmms-eval calls it from several threads and may call it again. Nothing here
imports a harness; it sets attributes of the harness's built task, so it lives in the edge.
"""

from __future__ import annotations

import functools
import json
import logging
import threading
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from eval_plugins import built_tasks
from orca_judge.errors import LlmJudgeError, OrcaMetricError
from orca_judge.metric.judge_pass import JudgeSession, active_session, item_id
from orca_judge.metric.payloads import (
    DEFAULT_QUESTION_FIELD,
    HIGHER_IS_BETTER,
    PROMPT_SOURCE,
    figures_for,
    judge_inputs,
    needs_prompt,
    payloads,
)
from orca_judge.metric.settings import (
    LM_EVAL_METADATA_HINT,
    METRIC,
    OrcaMetricSettings,
    resolve_settings,
)
from orca_judge.processes import Processes
from orca_judge.prompted.metric import FIGURES as LLM_FIGURES
from orca_judge.prompted.metric import HIGHER_IS_BETTER as LLM_HIGHER_IS_BETTER
from orca_judge.prompted.metric import session_judge
from orca_judge.prompted.settings import LM_EVAL_METADATA_HINT as LLM_LM_EVAL_METADATA_HINT
from orca_judge.prompted.settings import METRIC as LLM_METRIC
from orca_judge.prompted.settings import LlmJudgeSettings
from orca_judge.prompted.settings import resolve_settings as resolve_llm_settings

logger = logging.getLogger(__name__)
WIRED = "_orca_wired"
LLM_WIRED = "_llm_judge_wired"
Aggregation = Callable[[list], float]


def metric_entries(
    task: Any, metric: str, functions: Iterable[Callable] = ()
) -> list[Mapping[str, Any]]:
    """The task's `metric_list` entries that ask for `metric` (by name or function)."""
    entries = getattr(task.config, "metric_list", None) or []
    functions = tuple(functions)
    return [e for e in entries if e.get("metric") == metric or e.get("metric") in functions]


def reference_of(task: Any, doc: Mapping[str, Any]) -> Any:
    """The task's gold answer for a doc, as the harness's own generate_until scoring takes it."""
    target = task.doc_to_target(doc)
    if task.config.doc_to_choice is not None and isinstance(target, int):
        return task.doc_to_choice(doc)[target]
    return target


def check_question_field(task: Any, settings: OrcaMetricSettings, where: str) -> None:
    """Raise OrcaMetricError unless every doc has the question field the entry names."""
    name = settings.question_field
    if not name:
        return
    docs = task.eval_docs
    columns = getattr(docs, "column_names", None)
    if columns is not None:
        if name not in columns:
            raise OrcaMetricError(
                f"{where}: question_field {name!r} is not a doc field (fields: "
                f"{', '.join(columns)}); name one of them, or leave question_field unset to use "
                f"`{DEFAULT_QUESTION_FIELD}`, else the prompt"
            )
        return
    missing = [i for i, doc in enumerate(docs) if name not in doc]
    if missing:
        raise OrcaMetricError(
            f"{where}: question_field {name!r} is missing from {len(missing)} doc(s), "
            f"the first at position {missing[0]}"
        )


def metadata_settings(metadata: Any) -> dict[str, Any]:
    """A task's metadata as a mapping: lmms-eval YAMLs often write it as a list of mappings."""
    if isinstance(metadata, Mapping):
        return dict(metadata)
    if isinstance(metadata, (list, tuple)):
        merged: dict[str, Any] = {}
        for part in metadata:
            if isinstance(part, Mapping):
                merged.update(part)
        return merged
    return {}


def with_record(metadata: Any, key: str, value: Any) -> Any:
    """The task's metadata with `key: value` added, keeping the form (mapping or list) it had."""
    if isinstance(metadata, (list, tuple)):
        return [*metadata, {key: value}]
    return {**(metadata if isinstance(metadata, Mapping) else {}), key: value}


def question_rule(settings: OrcaMetricSettings) -> str | None:
    """Where the judge's question comes from, as recorded in the results' task config."""
    if settings.question_field == "":
        return None
    if settings.question_field is None:
        return f"doc.{DEFAULT_QUESTION_FIELD} if present, else {PROMPT_SOURCE}"
    return f"doc.{settings.question_field}"


def doc_inputs(task: Any, settings: Any, doc: Mapping[str, Any], results: list) -> dict[str, Any]:
    """What the judge reads of one doc and its reply (the first request's filtered reply)."""
    return judge_inputs(
        settings,
        reference=reference_of(task, doc),
        candidate=results[0] if results else "",
        doc=doc,
        prompt=task.doc_to_text(doc) if needs_prompt(settings, doc) else None,
    )


def _input_key(inputs: Mapping[str, Any]) -> str:
    return json.dumps(inputs, sort_keys=True, default=str)


class RankShare:
    """This process's share of a task's ORCA judging in a run of several processes.

    lm-eval gives each process every world_size-th doc and aggregates on rank 0 alone, after
    the other processes have returned; judging in the aggregation would leave them idle. So
    when a process collects its first doc of the task, it scores the replies of all its own
    docs (every filter) in one batched pass, and each doc's payloads carry its prediction and
    its doc position to rank 0, which sorts them back into doc order and reuses them: the
    same predictions and figures as one process. If that pass fails, rank 0 judges them.
    """

    def __init__(self, task: Any, settings: OrcaMetricSettings, session: JudgeSession) -> None:
        self._task, self._settings, self._session = task, settings, session
        self._lock = threading.Lock()
        self._scored: dict[str, list[tuple[int, dict[str, Any]]]] | None = None
        self._served: dict[str, int] = {}

    def lookup(self, inputs: Mapping[str, Any]) -> tuple[int | None, dict[str, Any] | None]:
        """(doc position, prediction) of one doc's judge inputs; (None, None) when this process
        did not judge it (rank 0's aggregation then does)."""
        key = _input_key(inputs)
        with self._lock:
            if self._scored is None:
                self._scored = self._score_own_docs()
            found = self._scored.get(key)
            if not found:
                return None, None
            # Identical docs with identical replies: hand out their positions in turn.
            turn = self._served.get(key, 0)
            self._served[key] = turn + 1
            position, prediction = found[turn % len(found)]
        # Recorded under the id one process gives it: its own, else its doc position.
        return position, {**prediction, "id": item_id({**inputs, "index": position})}

    def _score_own_docs(self) -> dict[str, list[tuple[int, dict[str, Any]]]]:
        by_doc: dict[int, list[Any]] = {}
        for instance in getattr(self._task, "instances", None) or ():
            if getattr(instance, "doc", None) is None or not isinstance(instance.doc_id, int):
                logger.warning(
                    "%s: this harness's requests do not hold their docs; ORCA judges on rank 0",
                    self._task.config.task,
                )
                return {}
            by_doc.setdefault(instance.doc_id, []).append(instance)
        keyed: dict[str, list[int]] = {}
        records: dict[str, dict[str, Any]] = {}
        for doc_id in sorted(by_doc):
            requests = sorted(by_doc[doc_id], key=lambda r: r.idx)
            for filter_key in requests[0].filtered_resps:
                results = [r.filtered_resps[filter_key] for r in requests]
                inputs = doc_inputs(self._task, self._settings, requests[0].doc, results)
                key = _input_key(inputs)
                if doc_id not in keyed.setdefault(key, []):
                    keyed[key].append(doc_id)
                records.setdefault(key, inputs)
        keys = list(records)
        try:
            made = self._score([records[k] for k in keys])
        except Exception as err:  # the run and its generations must survive a judge failure
            logger.warning(
                "%s: judging this process's docs failed (%s); ORCA judges them on rank 0",
                self._task.config.task,
                err,
            )
            return {}
        predictions = dict(zip(keys, made, strict=True))
        return {key: [(d, predictions[key]) for d in ids] for key, ids in keyed.items()}

    def _score(self, inputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
        judge = self._session.judge(self._settings)
        records = [{**item, "id": item_id({**item, "index": i})} for i, item in enumerate(inputs)]
        scored = judge.score(records, batch_size=self._settings.batch_size)
        return [prediction.to_dict() for prediction in scored]


def feed_doc(
    task: Any, settings: Any, figures: Sequence[str], share: RankShare | None = None
) -> None:
    """Make the task's `process_results` add the judge's inputs, one payload per figure.

    `settings` is the metric's settings record (the doc fields it names: `question_field`,
    `rationale_field`, `transcript_field`, `ratings_field`, `id_field`). With a `share` (ORCA
    in a run of several processes) each payload also carries the doc's prediction.
    """
    original = task.process_results
    resolved = asdict(settings)
    name = task.config.task

    @functools.wraps(original)
    def process_results(doc: Mapping[str, Any], results: list, *args: Any, **kwargs: Any) -> dict:
        out = dict(original(doc, results, *args, **kwargs))
        if built_tasks.predict_only(task):
            return out
        inputs = doc_inputs(task, settings, doc, results)
        scored = None
        if share is not None:
            position, scored = share.lookup(inputs)
            if scored is not None:
                inputs["index"] = position
        out.update(
            payloads(inputs, resolved, doc_aware=True, figures=figures, task=name, scored=scored)
        )
        return out

    task.process_results = process_results


@dataclass(frozen=True)
class JudgeKind:
    """What sets one judge metric apart when a task is wired: its name, errors and settings,
    how its judge is loaded, which figures it reports and what the results record of it."""

    metric: str
    error: type[Exception]
    wired: str  # attribute marking a wired task
    resolve: Callable[..., Any]  # resolve(entry, metadata, where=, metadata_hint=) -> settings
    load: Callable[[JudgeSession, Any], Any]  # the session's judge for these settings
    figures: Callable[[Any, Any], Sequence[str]]  # (settings, judge) -> figure names
    higher_is_better: Mapping[str, bool]
    record_key: str  # the task config's metadata key of the record
    describe: Callable[[Any, Any], dict]  # (settings, judge) -> the judge's part of the record
    metadata_hint: str  # how lm-eval's run sets the metric's settings


def _describe_orca(settings: OrcaMetricSettings, judge: Any) -> dict:
    return {
        "checkpoint": settings.checkpoint,
        "judge_fingerprint": judge.fingerprint(),
        "clamp": settings.clamp,
        "ratings": settings.ratings_field or None,
    }


ORCA = JudgeKind(
    metric=METRIC,
    error=OrcaMetricError,
    wired=WIRED,
    resolve=resolve_settings,
    load=lambda session, settings: session.judge(settings),
    figures=lambda settings, judge: figures_for(settings, judge.config.likelihood),
    higher_is_better=HIGHER_IS_BETTER,
    record_key="orca_inputs",
    describe=_describe_orca,
    metadata_hint=LM_EVAL_METADATA_HINT,
)
LLM_JUDGE = JudgeKind(
    metric=LLM_METRIC,
    error=LlmJudgeError,
    wired=LLM_WIRED,
    resolve=resolve_llm_settings,
    load=session_judge,
    figures=lambda settings, judge: LLM_FIGURES,
    higher_is_better=LLM_HIGHER_IS_BETTER,
    record_key="llm_judge_inputs",
    describe=lambda settings, judge: judge.describe(),
    metadata_hint=LLM_LM_EVAL_METADATA_HINT,
)


def wire(
    task: Any,
    session: JudgeSession | None,
    kind: JudgeKind,
    *,
    aggregation: Aggregation,
    form: str,
    functions: Iterable[Callable] = (),
    generative: Callable[[str], bool] = lambda output_type: output_type == "generate_until",
    metadata_hint: str | None = None,
    share_docs: bool = False,
) -> OrcaMetricSettings | LlmJudgeSettings | None:
    """Validate the task's entry of the judge `kind`, load its judge into the session, feed the
    judge the doc; None where the task does not use it. Both judges, both harnesses.

    `aggregation` is the harness's aggregation of the metric, `form` is recorded in the
    results' task config, `functions` are metric functions that also mean it (`!function`
    form), `generative` says which output types produce replies to judge, `metadata_hint` how
    the harness's run sets its settings (default: lm-eval's `--metadata`).
    `share_docs`: in a run of several processes each judges its own docs (`RankShare`, orca
    only; the harness's requests must hold their docs and final replies, as lm-eval 0.4's do).
    """
    session = session or active_session() or JudgeSession()
    entries = metric_entries(task, kind.metric, functions)
    if not entries or getattr(task, kind.wired, False) or built_tasks.predict_only(task):
        return None
    where = f"task {task.config.task!r}, metric {kind.metric}"
    if len(entries) > 1:
        raise kind.error(f"{where}: one {kind.metric} entry per task (found {len(entries)})")
    if not generative(str(task.config.output_type)):
        raise kind.error(
            f"{where}: {kind.metric} judges generated answers; output_type is "
            f"{task.config.output_type!r}"
        )
    settings = kind.resolve(
        entries[0],
        metadata_settings(task.config.metadata),
        where=where,
        metadata_hint=metadata_hint or kind.metadata_hint,
    )
    check_question_field(task, settings, where)
    try:
        judge = kind.load(session, settings)
    except kind.error as err:
        raise kind.error(f"{where}: {err}") from err
    figures = list(kind.figures(settings, judge))
    # Several processes: each judges its own docs (see RankShare); one process: the aggregation.
    processes = Processes.current()
    shared = share_docs and kind is ORCA and processes.distributed
    feed_doc(task, settings, figures, RankShare(task, settings, session) if shared else None)
    built_tasks.take_over_metric(
        task, kind.metric, dict.fromkeys(figures, aggregation), kind.higher_is_better
    )
    # Recorded in the results' task config: which judge, and which doc fields it reads.
    task.config.metadata = with_record(
        task.config.metadata,
        kind.record_key,
        {
            "form": form,
            **kind.describe(settings, judge),
            "question": question_rule(settings),
            "rationale": settings.rationale_field or None,
            "transcript": settings.transcript_field or None,
            "reference": "doc_to_target",
            "candidate": "filtered reply",
            # How many processes judged: each its own docs when more than one.
            **({"processes": processes.world_size if shared else 1} if kind is ORCA else {}),
        },
    )
    setattr(task, kind.wired, True)
    return settings


# wire(task, session): one judge's wiring of a built task in one harness (None: not used).
Wire = Callable[[Any, JudgeSession], OrcaMetricSettings | LlmJudgeSettings | None]


def prepare_tasks(
    task_dict: Mapping[str, Any], wires: Sequence[Wire]
) -> list[OrcaMetricSettings | LlmJudgeSettings]:
    """Wire every built task that uses a judge, with each harness's `wires` (orca, llm_judge),
    in the evaluation's judge session; raises before any request is built. Both harnesses."""
    from eval_common.evaluation import built_tasks as tasks_of

    session = active_session() or JudgeSession()
    found: list[OrcaMetricSettings | LlmJudgeSettings] = []
    for task in tasks_of(task_dict):
        for wire_one in wires:
            if (settings := wire_one(task, session)) is not None:
                found.append(settings)
    return found
