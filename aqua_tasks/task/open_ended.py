"""The open-ended AQUA task (`aqua-open_<track>`): docs, prompt, per-item values, aggregations.

Both harnesses wrap these as they wrap the multiple-choice task (`definition`). The judge is
the task's `metric: orca` entry (its checkpoint from the entry, `judge` / `orca.checkpoint`
in the run's settings, or ORCA_CHECKPOINT). The AQUA figures of an open task come from that
entry's one judge pass: an aggregation finds the task's orca inputs among the values the
evaluation collected (`eval_common.evaluation`), runs or reuses the pass the orca figures are
read from (`orca_judge.metric.aggregate.judge_pass`), and turns each item's expected rating
into right or wrong by the run's `judge_threshold` (`JudgeRule`).
"""

from __future__ import annotations

import functools
import logging
import math
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType

import datasets

from aqua_tasks.audio.clips import AudioRoots, resolve_audio
from aqua_tasks.core.data import load_items, track_file
from aqua_tasks.core.docs import TEXT_ONLY_AUDIO_ERROR, audio_enabled, clip_indices
from aqua_tasks.core.manifest import package_version, sha256_file, sha256_text
from aqua_tasks.core.open_ended import (
    NO_OPEN_FORM,
    NO_OPEN_FORM_REASON,
    OPEN_GUIDANCE,
    OPEN_METRICS,
    OPEN_PROMPT_VERSION,
    OPEN_TYPES,
    JudgeRule,
    judged_outcomes,
    open_figures,
    open_prompt,
    open_question,
    open_value,
    rationale_of,
    reference_of,
)
from aqua_tasks.core.prompts import AUDIO_PLACEHOLDER
from aqua_tasks.core.scoring import ItemOutcome
from aqua_tasks.errors import AquaDataError, AudioFileError
from eval_common.evaluation import aggregated_values

logger = logging.getLogger(__name__)

FORM = "open"
JUDGE_METRIC = "orca"


def open_manifest(track: str, data_dir: str | None, judge_threshold: object) -> dict[str, str]:
    """What an open-ended task's run is made of: data file, prompt version, judge rule."""
    data_file = track_file(data_dir, track, "main")
    return {
        "data_file": data_file.name,
        "data_sha256": sha256_file(data_file),
        "track": track,
        "variant": "main",
        "form": FORM,
        "prompt_style": OPEN_PROMPT_VERSION,
        "prompt_sha256": sha256_text(OPEN_GUIDANCE),
        "judge_rule": JudgeRule.from_setting(judge_threshold).describe(),
        "no_open_form": NO_OPEN_FORM_REASON,
        "package_version": package_version(),
    }


def build_open_docs(
    track: str, *, data_dir: str | None = None, settings: Mapping | None = None
) -> tuple[list[dict], int]:
    """Docs of one track's open-ended task, and how many items have no open form."""
    settings = settings or {}
    rule = JudgeRule.from_setting(settings.get("judge_threshold"))
    items = load_items(data_dir, track, "main")
    clips = clip_indices(items)
    with_audio = audio_enabled(settings)
    roots = AudioRoots.from_settings(settings)
    classes_of = {i.clip_key: list(i.options) for i in items if i.type == "Solvable"}
    docs, skipped = [], 0
    for item in items:
        if item.type not in OPEN_TYPES:
            skipped += 1
            continue
        audio_path, audio_error = "", TEXT_ONLY_AUDIO_ERROR
        if with_audio:
            try:
                audio_path, audio_error = str(resolve_audio(track, item.audio_filename, roots)), ""
            except AudioFileError as error:
                audio_path, audio_error = "", str(error)
        reference, kind = reference_of(item)
        docs.append(
            {
                "id": item.id,
                "track": track,
                "form": FORM,
                "type": item.type,
                "subtype": item.subtype,
                "question": open_question(item),
                "prompt_version": OPEN_PROMPT_VERSION,
                "reference": reference,
                "reference_kind": kind,
                "rationale": rationale_of(item),
                "true_class": item.true_class,
                # Never shown to the model: the baselines' class names (the Solvable options).
                "classes": classes_of.get(item.clip_key, []),
                "audio_filename": item.audio_filename,
                "clip_index": clips[item.clip_key],
                "audio_path": audio_path,
                "audio_error": audio_error,
                "judge_threshold": rule.threshold,
            }
        )
    return docs, skipped


def load_dataset(**kwargs: object) -> datasets.DatasetDict:
    """`custom_dataset` hook of the open tasks: `--metadata` keys and the YAML's dataset_kwargs."""
    track = str(kwargs.get("track"))
    docs, skipped = build_open_docs(
        track,
        data_dir=kwargs.get("data_dir"),
        settings=kwargs,  # type: ignore[arg-type]
    )
    if skipped:
        logger.warning(
            "aqua-open_%s: %d %s items are not asked (%s)",
            track,
            skipped,
            "/".join(NO_OPEN_FORM),
            NO_OPEN_FORM_REASON,
        )
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(docs)})


def doc_to_text(doc: Mapping) -> str:
    """The open question and its guidance after the audio placeholder."""
    return f"{AUDIO_PLACEHOLDER}\n{open_prompt(doc['question'])}"


def doc_to_question(doc: Mapping) -> str:
    """`doc_to_text` without the audio placeholder (lmms-eval's models place the clip)."""
    return open_prompt(doc["question"])


def doc_to_target(doc: Mapping) -> str:
    """The reference the judge compares the reply with: the true class, or an abstention."""
    return str(doc["reference"])


def process_results(doc: Mapping, results: Sequence[str]) -> dict[str, object]:
    """The item's value for every open metric; `metric: orca` adds the judge's inputs."""
    reply = results[0] if results else ""
    value = open_value(doc, reply if isinstance(reply, str) else str(reply))
    return dict.fromkeys(OPEN_METRICS, value)


def _site(values: Sequence) -> tuple[str, str]:
    task, filter_key = getattr(values, "task", None), getattr(values, "filter_key", None)
    if task is None or filter_key is None:
        raise AquaDataError(
            "an open-ended AQUA aggregation received values without their task and filter: "
            "run it inside lm-eval or lmms-eval with this package installed"
        )
    return str(task), str(filter_key)


def judge_payloads(task: str, filter_key: str) -> Sequence[Mapping]:
    """The task's orca inputs the evaluation collected for this filter."""
    collected = aggregated_values().get(task) or {}
    payloads = collected.get((JUDGE_METRIC, filter_key))
    if not payloads:
        raise AquaDataError(
            f"{task}: no `metric: orca` inputs were collected for filter {filter_key!r}; an "
            "open-ended AQUA task needs its orca entry (task_configs/_aqua_open_base) and a "
            "judge checkpoint (--metadata '{\"judge\": CKPT}')"
        )
    return payloads


def expected_units(values: Sequence[Mapping], payloads: Sequence[Mapping]) -> list[float]:
    """Each item's expected correctness from the task's one judge pass, checked item by item."""
    from orca_judge.metric.aggregate import judge_pass

    if len(payloads) != len(values):
        raise AquaDataError(
            f"open-ended scoring: {len(values)} items but {len(payloads)} judge inputs"
        )
    for value, payload in zip(values, payloads, strict=True):
        judged_id = payload["inputs"].get("id")
        if judged_id is not None and str(judged_id) != str(value["id"]):
            raise AquaDataError(
                f"open-ended scoring: item {value['id']} met the judge inputs of item {judged_id}"
            )
    judged = judge_pass(payloads)
    return [p.expected_unit for p in judged.predictions]


def judged_task_outcomes(
    values: Sequence[Mapping], units: Sequence[float | None]
) -> tuple[ItemOutcome, ...]:
    """The outcomes the judge decided, under the one threshold the items were asked with."""
    thresholds = {float(v["threshold"]) for v in values}
    if len(thresholds) != 1:
        raise AquaDataError(
            f"open-ended scoring: the items were asked under several judge thresholds "
            f"{sorted(thresholds)}; score one threshold per run"
        )
    return judged_outcomes(values, units, JudgeRule(thresholds.pop()))


def site_outcomes(task: str, filter_key: str, values: Sequence[Mapping]) -> tuple[ItemOutcome, ...]:
    """A (task, filter)'s outcomes as its judge pass decides them (the pass runs once)."""
    return judged_task_outcomes(values, expected_units(values, judge_payloads(task, filter_key)))


@functools.lru_cache(maxsize=8)
def _cached_figures(key: tuple) -> Mapping[str, float]:
    values, units = key
    values = [dict(v) for v in values]
    return MappingProxyType(open_figures(values, judged_task_outcomes(values, list(units))))


def task_open_figures(values: Sequence) -> Mapping[str, float]:
    """The open figures of one (task, filter)'s collected values, computed once."""
    task, filter_key = _site(values)
    try:
        units = expected_units(values, judge_payloads(task, filter_key))
    except AquaDataError:
        raise
    except Exception as error:  # the judge failed: orca's own figures say why, and save inputs
        logger.error("%s/%s: no open-ended figures: the judge failed (%s)", task, filter_key, error)
        return MappingProxyType(dict.fromkeys(OPEN_METRICS, math.nan))
    key = (tuple(tuple(sorted(v.items())) for v in values), tuple(units))
    return _cached_figures(key)


# Attribute of an open aggregation: the figure it returns (see `aggregations.AQUA_METRIC`).
OPEN_METRIC = "aqua_open_metric"


def open_metric_of(aggregation: object) -> str | None:
    """The open figure an aggregation function returns (None: not an open aggregation)."""
    return getattr(aggregation, OPEN_METRIC, None)


def _aggregation(metric: str) -> Callable[[list], float]:
    def aggregate(values: list) -> float:
        return task_open_figures(values)[metric]

    aggregate.__name__ = f"aggregate_open_{metric}"
    aggregate.__doc__ = f"Aggregation returning the open-ended AQUA figure {metric!r}."
    setattr(aggregate, OPEN_METRIC, metric)
    return aggregate


aggregate_acc = _aggregation("acc")
aggregate_acc_iaqd = _aggregation("acc_iaqd")
aggregate_ca_iaqd = _aggregation("ca_iaqd")
aggregate_joint_iaqd = _aggregation("joint_iaqd")
aggregate_acc_rule = _aggregation("acc_rule")
aggregate_acc_iaqd_rule = _aggregation("acc_iaqd_rule")
aggregate_ca_iaqd_rule = _aggregation("ca_iaqd_rule")
aggregate_joint_iaqd_rule = _aggregation("joint_iaqd_rule")
aggregate_abstains_solvable = _aggregation("abstains_solvable")
aggregate_refuses_solvable = _aggregation("refuses_solvable")
aggregate_abstains_iaqd = _aggregation("abstains_iaqd")
aggregate_refuses_iaqd = _aggregation("refuses_iaqd")
aggregate_judge_rule_agree = _aggregation("judge_rule_agree")
aggregate_n_items = _aggregation("n_items")
aggregate_n_solvable = _aggregation("n_solvable")
aggregate_n_ca_iaqd = _aggregation("n_ca_iaqd")
aggregate_n_ca_iaqd_rule = _aggregation("n_ca_iaqd_rule")
aggregate_n_unjudged = _aggregation("n_unjudged")
