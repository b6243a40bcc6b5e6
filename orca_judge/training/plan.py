"""Planning a curriculum as orca train does: YAML and overrides to stages, then data to `Stage`s.

`plan_stages` reads nothing but the YAML (its settings checked, its paths resolved);
`load_stages` loads each stage's files, builds rule-rated stages, has a prompted judge rate
judge-rated ones and makes the one held-out split. `run_curriculum` (curriculum.py) then
trains what they planned.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from eval_common.cli import parse_bool
from eval_common.inputs import load_yaml
from orca_judge.config import OrcaConfig
from orca_judge.training.arguments import TrainingArguments, setting_problem, split_settings
from orca_judge.training.judge_rated import (
    MAX_FAILED_SHARE,
    RATED_BY,
    JudgeRating,
    judge_rating_plan,
)

# Keys of a curriculum stage besides OrcaConfig and TrainingArguments fields. `synthesize:
# true` (or a list of kinds) trains the stage on rule-rated candidates built from its `train`
# file (training/synthetic.py), not the file; `rated_by: {judge settings}` on the file's
# candidates rated by a prompted judge (training/judge_rated.py), `max_failed_share` with it.
STAGE_KEYS = frozenset({"train", "dev", "name", "synthesize", RATED_BY, MAX_FAILED_SHARE})
if TYPE_CHECKING:
    from orca_judge.training.curriculum import Curriculum

SETTING_FIELDS = frozenset(OrcaConfig.field_names()) | frozenset(TrainingArguments.field_names())


@dataclass(frozen=True)
class StagePlan:
    """One stage as planned: its files and settings, nothing loaded yet."""

    name: str
    train: str
    dev: str
    synthesize: tuple[str, ...] = ()  # the rule kinds built from `train` (): the file itself
    settings: dict[str, Any] = field(default_factory=dict)  # OrcaConfig + TrainingArguments
    rated_by: JudgeRating | None = None  # a prompted judge rates the train file's items


def _load_yaml(path: str | Path) -> dict[str, Any]:
    try:
        data = load_yaml(path) or {}
    except FileNotFoundError:
        raise ValueError(f"--config {path}: no such file") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of OrcaConfig fields at the top level")
    return data


def _stage_problem(stage: dict[str, Any], where: str, flags: Mapping[str, Any]) -> str | None:
    """Why a merged stage is refused (a key of the wrong type or out of range), or None."""
    for key, value in stage.items():
        label = "--" + key.replace("_", "-") if key in flags else key
        problem = None
        if key in ("train", "dev", "name"):
            if not isinstance(value, str):
                wanted = "a name" if key == "name" else "a file name"
                problem = f"{label}: expected {wanted}, got {value!r}"
        elif key not in ("synthesize", RATED_BY, MAX_FAILED_SHARE):  # judge_rating_plan's
            problem = setting_problem(key, value, label)
        if problem:
            return problem if key in flags else f"{where}: {problem}"
    return None


def _resolve(path: str | None, base: Path) -> str | None:
    if path is None:
        return None
    p = Path(path)
    return str(p if p.is_absolute() or p.exists() else base / p)


def plan_stages(
    config: str | Path | None = None,
    *,
    train: str | None = None,
    dev: str | None = None,
    data_dir: str | Path | None = None,
    overrides: Mapping[str, Any] | None = None,
) -> list[StagePlan]:
    """The stages a curriculum YAML (or `train`/`dev` alone) describes; `overrides` win over it.

    `overrides` are OrcaConfig and TrainingArguments fields (orca train's flags; a refusal
    names them as --flag). Relative train/dev paths from the YAML are read from `data_dir`,
    else from the YAML's `data_dir` (itself relative to the YAML), else the current folder
    or the YAML's folder; `train`/`dev` given here are read as they are. ValueError names
    the stage and key of anything refused.
    """
    top: dict[str, Any] = {}
    config_dir = Path.cwd()
    base: Path | None = None
    if config:
        top = _load_yaml(config)
        config_dir = Path(config).resolve().parent
        if top.get("data_dir") is not None:
            base = config_dir / str(top["data_dir"])
        top.pop("data_dir", None)
    if data_dir:
        base = Path(data_dir)
    flags = {k: v for k, v in (overrides or {}).items() if v is not None}
    if unknown := sorted(set(flags) - SETTING_FIELDS):
        raise ValueError(f"unknown OrcaConfig or TrainingArguments fields: {', '.join(unknown)}")
    given = {key: value for key, value in (("train", train), ("dev", dev)) if value}
    top.update(given)
    raw_stages = top.pop("stages", None) or [{"name": "main"}]
    if not isinstance(raw_stages, list):
        raise ValueError(f"{config}: stages: expected a list of stages (mappings)")
    stages = []
    for i, raw in enumerate(raw_stages):
        if not isinstance(raw, dict):
            raise ValueError(f"{config}: stage {i + 1}: expected a mapping, got {raw!r}")
        merged = {**{k: v for k, v in top.items() if k != "name"}, **raw, **flags}
        where = f"{config}: stage {merged.get('name', i + 1)!r}" if config else "stage"
        unknown = set(merged) - SETTING_FIELDS - STAGE_KEYS
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        if problem := _stage_problem(merged, where, flags):
            raise ValueError(problem)
        for key in ("train", "dev"):
            if not merged.get(key):
                raise ValueError(f"stage {merged.get('name', i)}: no --{key} file given")
            if merged[key] == given.get(key):
                continue  # a path given here (on the command line) is read as it is
            if base is not None:
                merged[key] = str(base / merged[key])
            else:
                merged[key] = _resolve(merged[key], config_dir)
        name = merged.get("name", f"stage{i + 1}")
        synthesize = synthetic_kinds(merged.get("synthesize", False), f"stage {name}: synthesize")
        rated_by = judge_rating_plan(merged, where, bool(synthesize))
        if not merged.get("backbone"):
            raise ValueError("no --backbone given")
        settings = {k: v for k, v in merged.items() if k not in STAGE_KEYS}
        stages.append(
            StagePlan(name, merged["train"], merged["dev"], synthesize, settings, rated_by)
        )
    return stages


def synthetic_kinds(value: Any, where: str) -> tuple[str, ...]:
    """The kinds a stage's `synthesize:` builds: true = the default kinds, a list = those."""
    from orca_judge.training.synthetic import DEFAULT_KINDS, KINDS

    if isinstance(value, list):
        unknown = [k for k in value if k not in KINDS]
        if not value or unknown:
            raise ValueError(
                f"{where}: expected true, false or a list of kinds from {', '.join(KINDS)}; "
                f"got {value!r}"
            )
        return tuple(dict.fromkeys(value))
    return DEFAULT_KINDS if parse_bool(where, value) else ()


def synthesized_record(kinds: Sequence[str]) -> str:
    """How a stage's data record names its rule-rated candidates (the default kinds as before)."""
    from orca_judge.training.synthetic import DEFAULT_KINDS

    if tuple(kinds) == DEFAULT_KINDS:
        return "rule-rated (orca synthesize)"
    return f"rule-rated (orca synthesize --kinds {' '.join(kinds)})"


def _seed(plan: StagePlan) -> int:
    """The training seed, which also draws a synthesized stage's candidates."""
    return plan.settings.get("seed", TrainingArguments.__dataclass_fields__["seed"].default)


def training_data_fingerprints(plans: Sequence[StagePlan]) -> dict[str, dict[str, str]]:
    """What each planned stage trains and stops on, by stage name, without training or rating.

    `train` fingerprints the rule-rated candidates a `synthesize` stage builds from its file
    (so a change to the rules shows, not only one to the file), else the file's bytes; `dev`
    the dev file's bytes (each the first 16 hex digits of a sha256). Two plans with equal
    fingerprints and settings train on the same data, except a `rated_by` stage: its ratings
    come from a judge, not the file. DataError names a file that cannot be parsed, OSError one
    that cannot be read.
    """
    from orca_judge.data import file_sha256, items_fingerprint, load_items
    from orca_judge.training.synthetic import build_synthetic_items

    fingerprints = {}
    for plan in plans:
        if plan.synthesize:
            items = load_items(plan.train, require_ratings=True)
            built, _ = build_synthetic_items(items, seed=_seed(plan), kinds=plan.synthesize)
            train = items_fingerprint(built)
        else:
            train = file_sha256(plan.train)
        fingerprints[plan.name] = {"train": train, "dev": file_sha256(plan.dev)}
    return fingerprints


def load_stages(
    plans: Sequence[StagePlan],
    *,
    heldout_fraction: float = 0.0,
    split_seed: int = 0,
    progress: bool = False,
) -> Curriculum:
    """The planned stages with their data loaded and the held-out split made, as a Curriculum.

    Each stage's data records its files, their sha256 and the split settings (a resume with
    other data is refused); a `rated_by` stage's items are rated by its judge here (a progress
    bar with `progress`), and its data records the judge and how many items it rated and
    failed. DataError names a file that cannot be read.
    """
    # Loaded here, not at import: planning (and orca train --help) needs no torch.
    from orca_judge.data import file_sha256, load_items
    from orca_judge.training.curriculum import Curriculum, Stage
    from orca_judge.training.heldout import heldout_fraction_problem, hold_out
    from orca_judge.training.judge_rated import rate_items
    from orca_judge.training.synthetic import build_synthetic_items

    if problem := heldout_fraction_problem(heldout_fraction):
        raise ValueError(problem)  # before any data is read
    trains, judge_records = [], []
    for plan in plans:
        # A judge-rated stage's file holds candidates to rate: ratings it has are replaced.
        items = load_items(plan.train, require_ratings=plan.rated_by is None)
        record = None
        if plan.synthesize:
            items, _ = build_synthetic_items(items, seed=_seed(plan), kinds=plan.synthesize)
        elif plan.rated_by is not None:
            items, record = rate_items(items, plan.rated_by, plan.name, progress=progress)
        trains.append(items)
        judge_records.append(record)
    devs = [load_items(plan.dev, require_ratings=True) for plan in plans]
    split = hold_out(trains, devs, heldout_fraction, split_seed)
    stages = []
    for plan, train_items, dev_items, record in zip(
        plans, trains, split.devs, judge_records, strict=True
    ):
        provenance = {
            "train_file": plan.train,
            "train_file_sha256": file_sha256(plan.train),
            **(
                {"train_synthesized": synthesized_record(plan.synthesize)}
                if plan.synthesize
                else {}
            ),
            **({"train_rated_by": record} if record is not None else {}),
            "dev_file": plan.dev,
            "dev_file_sha256": file_sha256(plan.dev),
            **split.record,
        }
        config, training = split_settings(plan.settings)
        stages.append(Stage(plan.name, config, train_items, dev_items, provenance, training))
    source = plans[-1].dev if split.items else None
    return Curriculum(stages, split.items, source)
