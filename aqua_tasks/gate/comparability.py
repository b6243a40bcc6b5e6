"""Whether two runs can be compared item by item, and the first reason when they cannot.

Each run is read once by `aqua_tasks.runs` into a `ComparedRun`; pairs that differ in tasks,
items, manifest, audio mode, prompts, questions or judge checkpoint are refused. Every check
applies whatever form a run is given in (a folder, a results file, a samples file, an lmms-eval
log, the authors' format): each setting is established from what the run holds, and a pair is
refused when a setting of either run cannot be established, naming what to pass.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aqua_tasks.core.data import AquaItem
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR, EXTRACTOR_ALIASES
from aqua_tasks.core.extract.fallback import FALLBACK_EXTRACTOR
from aqua_tasks.core.manifest import FALLBACK_MANIFEST_FIELDS, MANIFEST_FIELDS
from aqua_tasks.errors import AquaDataError
from aqua_tasks.runs import (
    HARNESS_AUTHORS,
    HARNESS_LM_EVAL,
    JudgeResults,
    RunItem,
    RunSource,
    iter_tasks,
    judge_files_beside,
    read_judge_results,
    read_run,
    require_aqua_items,
)
from aqua_tasks.runs.open_ended import is_open_item, open_settings

# Manifest fields that must match; package_version and the file name may differ. Both runs
# are re-scored here by the current code of their extractor, so a recorded extractor version
# (or an old name of the same extractor) is no reason to refuse a baseline.
COMPARED_MANIFEST = (
    "track",
    "variant",
    "prompt_style",
    "prompt_sha256",
    "data_sha256",
    "extractor",
)
# Doc fields that are not the question: the machine's (audio is checked on its own), the run
# manifest (compared through COMPARED_MANIFEST; 0.1.0 repeated it in every doc, later docs keep
# only manifest.DOC_FIELDS) and the clip index (derived from the data file, whose hash is
# compared), so runs of either doc layout compare.
# A fallback run's docs also carry its fallback (compared by `_fallback_reason`) and its client
# settings (`fallback`: the endpoint is the machine's).
LOCAL_DOC_FIELDS = frozenset(
    {
        "audio_path",
        "audio_error",
        "clip_index",
        "fallback",
        *MANIFEST_FIELDS,
        *FALLBACK_MANIFEST_FIELDS,
    }
)
# Judge inputs that must agree item by item for judge scores to be comparable (the
# candidate's reply is what is compared).
JUDGE_INPUTS = ("question", "reference", "rationale", "transcript", "ratings")
AUDIO_MODES = {True: "with audio", False: "text-only"}
# The authors' format logs no prompt: their evaluation sends the released question, which is
# what prompt style "plain" sends.
AUTHORS_PROMPT_STYLE = "plain"
ITEM_FIELDS = tuple(f.name for f in dataclasses.fields(AquaItem))


@dataclass(frozen=True)
class ComparedRun:
    """A run's replies with what is needed to tell whether two runs are comparable.

    `samples` holds every logged item by (task, item id) for AQUA tasks and (task, doc_id)
    for others; `judges` the ORCA per-item results by (task, filter); `judge_meta` what the
    results file records about each task's judge (`metadata.orca_inputs`).
    """

    path: Path
    label: str
    replies: list[RunItem]
    samples: dict[tuple[str, int], RunItem]
    audio: dict[str, bool | None]  # per AQUA task; None: the run does not say
    judges: dict[tuple[str, str], JudgeResults] = dataclasses.field(default_factory=dict)
    judge_meta: dict[str, Mapping] = dataclasses.field(default_factory=dict)
    harness: str = HARNESS_LM_EVAL
    sources: tuple[RunSource, ...] = ()
    notes: tuple[str, ...] = ()  # how the run was read (e.g. the data folder its items are from)


def load_compared_run(
    path: Path, data_dir: Path | None = None, audio: bool | None = None
) -> ComparedRun:
    """Replies, logged hashes, judge results, label and audio mode of a run folder or file.

    `data_dir` (the released files) rebuilds the items of an lmms-eval log, which logs none;
    its items then carry that content, which the comparability checks compare. `audio`
    states the audio mode of a run that does not record it (AquaDataError if it records
    another).
    """
    run = read_run(path, data_dir=data_dir)
    judges = {(r.task, r.filter): r for r in (read_judge_results(f.path) for f in run.files.judges)}
    if path.is_file() and not judges:
        # Given one of its files, a run's judge results (named by their own time) are not read:
        # the gate would pass it without comparing its judge scores.
        beside = judge_files_beside(path, {i.task for i in run.items})
        if beside:
            raise AquaDataError(
                f"{path}: its folder holds ORCA judge results of this run ({beside[0].name}); "
                f"pass the run folder ({path.parent}) so that its judge scores are compared too"
            )
    # Judge results without --log_samples: only the judge can be compared.
    replies = run.aqua_items if judges or run.other_items else require_aqua_items(run)
    modes = run.audio_modes()
    if audio is not None:
        for task, mode in modes.items():
            if mode is not None and mode != audio:
                raise AquaDataError(
                    f"{path}: stated {'with' if audio else 'without'} audio, but its {task} "
                    f"records a run {AUDIO_MODES[mode]}"
                )
        modes = dict.fromkeys(modes, audio)
    return ComparedRun(
        path=path,
        label=run.label,
        replies=replies,
        samples={i.key: i for i in run.items},
        audio=modes,
        sources=tuple(run.sources()),
        judges=dict(sorted(judges.items())),
        judge_meta={t: m.get("orca_inputs") or {} for t, m in run.task_metadata().items()},
        harness=run.harness,
        notes=run.notes,
    )


def _setting(reply: RunItem, field: str) -> object:
    if field == "extractor":
        name = reply.extractor or reply.manifest.get("extractor") or DEFAULT_EXTRACTOR
        return EXTRACTOR_ALIASES.get(name, name)
    if field == "variant":
        return reply.item.variant
    if field == "track":
        return reply.item.track
    if field == "exclude_defective":
        return reply.exclude_defective
    return reply.manifest.get(field)


def _reader(items: Mapping[int, RunItem]) -> str:
    """Who read a task's replies: the rules only, or the rules and which LLM fallback."""
    readers = set()
    for r in items.values():
        if _setting(r, "extractor") != FALLBACK_EXTRACTOR:
            readers.add("rules only")
            continue
        model = r.manifest.get("fallback_model") or "model not recorded"
        prompt = r.manifest.get("fallback_prompt_version") or "prompt not recorded"
        readers.add(f"rules + LLM fallback {model}, {prompt}")
    return "; ".join(sorted(readers))


def _fallback_reason(task: str, b: Mapping[int, RunItem], c: Mapping[int, RunItem]) -> str | None:
    """Why a run read with the LLM fallback cannot be compared with the other, or None.

    As MMAU's leaderboard keeps its GPT-parsed and regex-parsed figures apart, a run whose
    unparsed replies a model read is compared only with one read by the same model and prompt.
    """
    base, cand = _reader(b), _reader(c)
    if base == cand or "LLM fallback" not in base + cand:
        return None
    return (
        f"{task}: read differently (baseline {base}; candidate {cand}): a run read with an LLM "
        "fallback is compared only with one of the same fallback model and prompt"
    )


def _example(keys: Sequence[tuple[str, int]]) -> str:
    shown = ", ".join(str(i) for _, i in sorted(keys)[:3])
    return f"{len(keys)} items, e.g. id {shown}"


def why_not_comparable(base: ComparedRun, cand: ComparedRun) -> str | None:
    """The first reason the two runs cannot be compared item by item, or None."""
    if not (base.replies or base.judges or cand.replies or cand.judges):
        return "nothing to compare: neither run has aqua_* task replies or ORCA judge results"
    base_tasks = dict(iter_tasks(base.replies))
    cand_tasks = dict(iter_tasks(cand.replies))
    if set(base_tasks) != set(cand_tasks):
        return (
            f"different tasks (baseline: {', '.join(sorted(base_tasks))}; "
            f"candidate: {', '.join(sorted(cand_tasks))})"
        )
    for task in sorted(base_tasks):
        b = {r.item.id: r for r in base_tasks[task]}
        c = {r.item.id: r for r in cand_tasks[task]}
        if b.keys() != c.keys():
            only_b, only_c = sorted(b.keys() - c.keys()), sorted(c.keys() - b.keys())
            return (
                f"{task}: different items ({len(only_b)} only in baseline, {len(only_c)} only in "
                f"candidate; e.g. id {(only_b or only_c)[0]}) — same --limit/--samples needed"
            )
        reason = _fallback_reason(task, b, c)
        if reason is not None:
            return reason
        for field in (*COMPARED_MANIFEST, "exclude_defective"):
            bv = {str(_setting(r, field)) for r in b.values()}
            cv = {str(_setting(r, field)) for r in c.values()}
            # A field neither run format records (e.g. the authors' JSON has no manifest) is
            # not evidence of a difference.
            if bv != cv and "None" not in bv | cv:
                return (
                    f"{task}: {field} differs (baseline {', '.join(sorted(bv))}; "
                    f"candidate {', '.join(sorted(cv))})"
                )
        reason = _audio_reason(task, base, cand) or _prompt_reason(task, b, c, base, cand)
        if reason is not None:
            return reason
        reason = _sample_reason(task, [(task, i) for i in b], base, cand)
        if reason is not None:
            return reason
    return _open_reason(base, cand) or _judge_reason(base, cand)


def _open_reason(base: ComparedRun, cand: ComparedRun) -> str | None:
    """Why two runs' open-ended tasks cannot be compared: another prompt or judge threshold."""
    tasks = sorted({i.task for i in base.samples.values() if is_open_item(i)})
    for task in tasks:
        b = open_settings([i for i in base.samples.values() if i.task == task])
        c = open_settings([i for i in cand.samples.values() if i.task == task])
        if c and b != c:
            shown = ["; ".join(f"prompt {p}, threshold {t}" for p, t in sorted(s)) for s in (b, c)]
            return (
                f"{task}: asked or judged differently (baseline {shown[0]}; candidate "
                f"{shown[1]}): compare runs of one prompt version and judge_threshold"
            )
    return None


def _unknown_audio(run: ComparedRun) -> str:
    if run.harness == HARNESS_AUTHORS:
        return "the authors' results format does not record it"
    if run.harness == HARNESS_LM_EVAL:
        return "its samples do not say and no results file of its evaluation was found"
    return "lmms-eval records it only in the results file, and none was found for its samples"


def _audio_reason(task: str, base: ComparedRun, cand: ComparedRun) -> str | None:
    """Why the audio input of a task cannot be compared or differs, or None."""
    for side, run in (("baseline", base), ("candidate", cand)):
        if run.audio.get(task) is None:
            return (
                f"{task}: cannot tell whether the {side} fed audio ({_unknown_audio(run)}); pass "
                f"its run folder or results file, or state it with --{side}-audio on|off"
            )
    if base.audio[task] != cand.audio[task]:
        return (
            f"{task}: audio input differs (baseline {AUDIO_MODES[bool(base.audio[task])]}, "
            f"candidate {AUDIO_MODES[bool(cand.audio[task])]})"
        )
    return None


def _prompt_style(run: ComparedRun, items: Mapping[int, RunItem]) -> str:
    if run.harness == HARNESS_AUTHORS:
        return AUTHORS_PROMPT_STYLE
    return ", ".join(sorted({str(_setting(r, "prompt_style")) for r in items.values()}))


def _prompt_reason(
    task: str,
    b: Mapping[int, RunItem],
    c: Mapping[int, RunItem],
    base: ComparedRun,
    cand: ComparedRun,
) -> str | None:
    """Why the prompts of a task cannot be told to be the same when one run logs none, or None.

    Where both runs log every prompt, `_sample_reason` compares them item by item.
    """
    hashed = {
        side: all(r.prompt_hash is not None for r in items.values())
        for side, items in (("baseline", b), ("candidate", c))
    }
    if all(hashed.values()):
        return None
    if HARNESS_AUTHORS in (base.harness, cand.harness):
        styles = (_prompt_style(base, b), _prompt_style(cand, c))
        if styles[0] == styles[1]:
            return None
        shown = [
            "the released question (the authors' format)"
            if run.harness == HARNESS_AUTHORS
            else f"prompt style {style}"
            for run, style in zip((base, cand), styles, strict=True)
        ]
        return f"{task}: prompt differs (baseline {shown[0]}; candidate {shown[1]})"
    recorded = {
        side: all(r.manifest.get("prompt_sha256") for r in items.values())
        for side, items in (("baseline", b), ("candidate", c))
    }
    if all(recorded.values()):
        return None  # the recorded prompt templates are compared with the manifest
    side = next(s for s in hashed if not hashed[s] and not recorded[s])
    return (
        f"{task}: cannot tell whether the prompts are the same: the {side} logs no prompt "
        "hash and records no prompt_sha256; pass its run folder or results file"
    )


def comparability_notes(base: ComparedRun, cand: ComparedRun) -> list[str]:
    """What the comparison of two comparable runs had to take as given, one line each."""
    return [
        f"the {side} ({run.path}) is in the authors' results format, which logs no prompt: "
        "taken to be the released question, as prompt style plain sends it"
        for side, run in (("baseline", base), ("candidate", cand))
        if run.harness == HARNESS_AUTHORS
    ]


def _sample_reason(
    task: str, keys: Sequence[tuple[str, int]], base: ComparedRun, cand: ComparedRun
) -> str | None:
    """Why the logged prompts or questions of these items differ between the runs, or None."""
    both = [k for k in keys if k in base.samples and k in cand.samples]
    prompts = [
        k
        for k in both
        if None not in (base.samples[k].prompt_hash, cand.samples[k].prompt_hash)
        and base.samples[k].prompt_hash != cand.samples[k].prompt_hash
    ]
    lm_eval_only = base.harness == cand.harness == HARNESS_LM_EVAL
    if prompts:
        # lmms-eval logs the prompt (`input`), lm-eval its hash: both compare as a SHA-256.
        hashed = "lm-eval prompt_hash" if lm_eval_only else "SHA-256 of the logged prompt"
        return (
            f"{task}: prompt differs ({hashed}; {_example(prompts)}) — "
            "chat template, system instruction, few-shot or prompt text changed"
        )
    fields: set[str] = set()
    docs = []
    for k in both:
        bs, cs = base.samples[k], cand.samples[k]
        if bs.item is not None and cs.item is not None and not (bs.doc and cs.doc):
            # The authors' format logs no doc: its items' content is what is compared.
            differing = {f for f in ITEM_FIELDS if getattr(bs.item, f) != getattr(cs.item, f)}
        elif bs.doc_hash == cs.doc_hash:
            continue
        else:
            differing = {
                f
                for f in bs.doc.keys() | cs.doc.keys()
                if f not in LOCAL_DOC_FIELDS and bs.doc.get(f) != cs.doc.get(f)
            }
        if differing:
            fields |= differing
            docs.append(k)
    if docs:
        # lmms-eval items are rebuilt from the released data: their content is what differs.
        compared = "lm-eval doc_hash" if lm_eval_only else "item content"
        return (
            f"{task}: questions differ ({compared}; fields {', '.join(sorted(fields))}; "
            f"{_example(docs)})"
        )
    return None


def judge_identity(run: ComparedRun, results: JudgeResults) -> dict[str, object]:
    """checkpoint / fingerprint / clamp of a pass: from its rows, else the results file."""
    recorded = dict(results.judge or {})
    meta = run.judge_meta.get(results.task) or {}
    for key, meta_key in (
        ("checkpoint", "checkpoint"),
        ("fingerprint", "judge_fingerprint"),
        ("clamp", "clamp"),
    ):
        if recorded.get(key) is None and meta.get(meta_key) is not None:
            recorded[key] = meta[meta_key]
    return recorded


def _judge_reason(base: ComparedRun, cand: ComparedRun) -> str | None:
    """Why the two runs' ORCA judge scores cannot be compared item by item, or None."""
    for key in sorted(base.judges.keys() ^ cand.judges.keys()):
        which = "baseline" if key in base.judges else "candidate"
        return f"{key[0]}: ORCA judge scores (filter {key[1]}) only in the {which}"
    for key in sorted(base.judges):
        task = key[0]
        b, c = base.judges[key], cand.judges[key]
        bi, ci = judge_identity(base, b), judge_identity(cand, c)
        for run, identity, results in (("baseline", bi, b), ("candidate", ci, c)):
            if identity.get("checkpoint") is None and identity.get("fingerprint") is None:
                return f"{task}: the {run} does not record its judge checkpoint ({results.path})"
        if bi.get("fingerprint") and ci.get("fingerprint"):
            same = bi["fingerprint"] == ci["fingerprint"]
        else:  # files written before fingerprints were recorded: the path is all there is
            same = bi.get("checkpoint") == ci.get("checkpoint")
        if not same:
            shown = [
                f"{run} {i.get('checkpoint')}"
                + (f" (fingerprint {i['fingerprint']})" if i.get("fingerprint") else "")
                for run, i in (("baseline", bi), ("candidate", ci))
            ]
            return f"{task}: different ORCA judge checkpoints ({'; '.join(shown)})"
        if None not in (bi.get("clamp"), ci.get("clamp")) and bi["clamp"] != ci["clamp"]:
            return (
                f"{task}: ORCA judge clamping differs (baseline clamp={bi['clamp']}; "
                f"candidate clamp={ci['clamp']})"
            )
        brows, crows = b.by_key(), c.by_key()
        if brows.keys() != crows.keys():
            only_b = sorted(brows.keys() - crows.keys())
            only_c = sorted(crows.keys() - brows.keys())
            return (
                f"{task}: different judged items ({len(only_b)} only in baseline, {len(only_c)} "
                f"only in candidate; e.g. {(only_b or only_c)[0]})"
            )
        fields: set[str] = set()
        items = []
        for k in sorted(brows):
            bin_, cin = brows[k]["inputs"], crows[k]["inputs"]
            differing = {f for f in JUDGE_INPUTS if bin_.get(f) != cin.get(f)}
            if differing:
                fields |= differing
                items.append(k)
        if items:
            return (
                f"{task}: the judge read different inputs (fields {', '.join(sorted(fields))}; "
                f"{len(items)} items, e.g. {items[0]})"
            )
        aqua_tasks = {r.task for r in base.replies}
        if task not in aqua_tasks:
            doc_ids = {i for t, i in base.samples.keys() | cand.samples.keys() if t == task}
            reason = _sample_reason(task, [(task, i) for i in sorted(doc_ids)], base, cand)
            if reason is not None:
                return reason
    return None
