"""orca-train: fine-tune an ORCA judge on rated items (one stage, or a curriculum from YAML)."""

from __future__ import annotations

import argparse
import dataclasses
import json
import types
import typing
from pathlib import Path
from typing import Any

from eval_common.cli import (
    RESUMES,
    add_json_flag,
    add_progress_flag,
    bool_arg,
    command,
    fail,
    number_problem,
    parse_bool,
)
from eval_common.inputs import load_yaml
from orca_judge.config import OrcaConfig

PROG = "orca-train"


def _arg_type(hint: Any):
    args = [a for a in typing.get_args(hint) if a is not type(None)]
    base = (
        args[0]
        if isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        else hint
    )
    if typing.get_origin(base) is list:
        return "list"
    return base


def _none_or(kind):
    def parse(text: str):
        return None if text.lower() in ("none", "null") else kind(text)

    parse.__name__ = kind.__name__
    return parse


def _default_help(f: dataclasses.Field) -> str:
    """What a flag's help says of its default: the value, or how to give a required one."""
    if f.default in ("", dataclasses.MISSING):
        # An empty default means "none": the run refuses to start without a value.
        return " (no default: give it here or as `" + f.name + ":` in --config)"
    return f" (default {f.default})"


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__,
        epilog="Every OrcaConfig field is a flag; flags override values from --config YAML.",
    )
    io = parser.add_argument_group("data and output")
    io.add_argument("--train", help="training items (.jsonl / .json) with ratings")
    io.add_argument("--dev", help="dev items for early stopping and clamp tuning")
    io.add_argument("--output", required=True, help="checkpoint directory to write (best model)")
    io.add_argument(
        "--config", help="YAML with OrcaConfig fields, train/dev, and optional 'stages'"
    )
    io.add_argument(
        "--data-dir",
        help="folder that relative train/dev paths of --config are read from (default: the "
        "config's data_dir, else the current folder or the config's folder)",
    )
    io.add_argument(
        "--run-dir",
        help="log and resume state (default: <output>-run; with several stages, one "
        "subfolder per stage)",
    )
    io.add_argument(
        "--overwrite",
        action="store_true",
        help="replace an existing --output folder (or a run state of another run) instead of "
        "refusing; rerunning the same command resumes without it",
    )
    io.add_argument(
        "--keep-evaluations",
        type=int,
        default=0,
        metavar="N",
        help="also keep the checkpoints of the last N dev evaluations in "
        "<run-dir>/evaluations/step-NNNNNN (for orca-average); default 0 keeps only the best",
    )
    io.add_argument(
        "--heldout-fraction",
        type=float,
        default=0.0,
        help="move this fraction of the last stage's dev questions that no stage trains on "
        "to a held-out set, removed from every stage's dev set and used only for the final "
        "report",
    )
    io.add_argument("--split-seed", type=int, default=0, help="seed of the held-out split")
    io.add_argument(
        "--device", help="auto, cpu, cuda, cuda:1, mps (default auto: cuda, then mps, then cpu)"
    )
    add_json_flag(io, "print the final metrics as JSON")
    add_progress_flag(io)
    knobs = parser.add_argument_group("judge and training settings (OrcaConfig)")
    # The annotations are strings (postponed evaluation); resolve them without eval.
    hints = typing.get_type_hints(OrcaConfig)
    help_texts = OrcaConfig.field_help()
    for f in dataclasses.fields(OrcaConfig):
        kind = _arg_type(hints[f.name])
        flag = "--" + f.name.replace("_", "-")
        default = _default_help(f)
        if kind == "list":
            knobs.add_argument(flag, nargs="+", default=None, help=help_texts[f.name])
        else:
            parse = {bool: bool_arg, int: int, float: float, str: str}[kind]
            knobs.add_argument(
                flag, type=_none_or(parse), default=None, help=help_texts[f.name] + default
            )
    return parser


# Keys of a curriculum stage besides OrcaConfig fields. `synthesize: true` trains the stage on
# rule-rated candidates built from its `train` file (training/synthetic.py), not the file.
STAGE_KEYS = {"train", "dev", "name", "synthesize"}


def _load_yaml(path: str) -> dict[str, Any]:
    try:
        data = load_yaml(path) or {}
    except FileNotFoundError:
        raise ValueError(f"--config {path}: no such file") from None
    if not isinstance(data, dict):
        raise ValueError(f"{path}: expected a mapping of OrcaConfig fields at the top level")
    return data


def _stage_problem(stage: dict[str, Any], where: str, flags: dict[str, Any]) -> str | None:
    """Why a merged stage is refused (a key of the wrong type or out of range), or None."""
    for key, value in stage.items():
        label = "--" + key.replace("_", "-") if key in flags else key
        problem = None
        if key in ("train", "dev", "name"):
            if not isinstance(value, str):
                wanted = "a name" if key == "name" else "a file name"
                problem = f"{label}: expected {wanted}, got {value!r}"
        elif key != "synthesize":
            problem = OrcaConfig.field_problem(key, value, label)
        if problem:
            return problem if key in flags else f"{where}: {problem}"
    return None


def _resolve(path: str | None, base: Path) -> str | None:
    if path is None:
        return None
    p = Path(path)
    return str(p if p.is_absolute() or p.exists() else base / p)


def plan_stages(args: argparse.Namespace) -> list[dict[str, Any]]:
    """The stages to run as dicts of train/dev paths and OrcaConfig fields (flags override YAML).

    Relative train/dev paths from the YAML are read from --data-dir, else from the YAML's
    `data_dir` (itself relative to the YAML), else the current folder or the YAML's folder.
    """
    fields = {f.name for f in dataclasses.fields(OrcaConfig)}
    top: dict[str, Any] = {}
    config_dir = Path.cwd()
    data_dir: Path | None = None
    if args.config:
        top = _load_yaml(args.config)
        config_dir = Path(args.config).resolve().parent
        if top.get("data_dir") is not None:
            data_dir = config_dir / str(top["data_dir"])
        top.pop("data_dir", None)
    if getattr(args, "data_dir", None):
        data_dir = Path(args.data_dir)
    flags = {k: v for k, v in vars(args).items() if k in fields and v is not None}
    given = {key: getattr(args, key) for key in ("train", "dev") if getattr(args, key)}
    top.update(given)
    raw_stages = top.pop("stages", None) or [{"name": "main"}]
    if not isinstance(raw_stages, list):
        raise ValueError(f"{args.config}: stages: expected a list of stages (mappings)")
    stages = []
    for i, raw in enumerate(raw_stages):
        if not isinstance(raw, dict):
            raise ValueError(f"{args.config}: stage {i + 1}: expected a mapping, got {raw!r}")
        merged = {**{k: v for k, v in top.items() if k != "name"}, **raw, **flags}
        where = f"{args.config}: stage {merged.get('name', i + 1)!r}" if args.config else "stage"
        unknown = set(merged) - fields - STAGE_KEYS
        if unknown:
            raise ValueError(f"{where}: unknown keys {sorted(unknown)}")
        if problem := _stage_problem(merged, where, flags):
            raise ValueError(problem)
        for key in ("train", "dev"):
            if not merged.get(key):
                raise ValueError(f"stage {merged.get('name', i)}: no --{key} file given")
            if merged[key] == given.get(key):
                continue  # a path on the command line is relative to the current folder
            if data_dir is not None:
                merged[key] = str(data_dir / merged[key])
            else:
                merged[key] = _resolve(merged[key], config_dir)
        merged.setdefault("name", f"stage{i + 1}")
        merged["synthesize"] = parse_bool(
            f"stage {merged['name']}: synthesize", merged.get("synthesize", False)
        )
        if not merged.get("backbone"):
            raise ValueError("no --backbone given")
        stages.append(merged)
    return stages


def _load_stages(args: argparse.Namespace) -> tuple[list[Any], list[Any], str | None]:
    """(stages, held-out items, held-out source file): data loaded, split once for the run."""
    from orca_judge.data import file_sha256, load_items, normalize_question, split_heldout
    from orca_judge.training.curriculum import Stage
    from orca_judge.training.synthetic import build_synthetic_items

    planned = plan_stages(args)
    trains = []
    for spec in planned:
        items = load_items(spec["train"], require_ratings=True)
        if spec["synthesize"]:
            seed = spec.get("seed", OrcaConfig.__dataclass_fields__["seed"].default)
            items, _ = build_synthetic_items(items, seed=seed)
        trains.append(items)
    devs = [load_items(spec["dev"], require_ratings=True) for spec in planned]
    heldout: list[Any] = []
    if args.heldout_fraction > 0:
        devs, heldout = split_heldout(trains, devs, args.heldout_fraction, args.split_seed)
    split = {"heldout_fraction": args.heldout_fraction, "split_seed": args.split_seed}
    if heldout:
        split["heldout_items"] = len(heldout)
        split["heldout_questions"] = len({normalize_question(it.question) for it in heldout})
    stages = []
    for spec, train_items, dev_items in zip(planned, trains, devs, strict=True):
        provenance = {
            "train_file": spec["train"],
            "train_file_sha256": file_sha256(spec["train"]),
            **({"train_synthesized": "rule-rated (orca-synthesize)"} if spec["synthesize"] else {}),
            "dev_file": spec["dev"],
            "dev_file_sha256": file_sha256(spec["dev"]),
            **split,
        }
        fields = {k: v for k, v in spec.items() if k not in STAGE_KEYS}
        stages.append(Stage(spec["name"], OrcaConfig(**fields), train_items, dev_items, provenance))
    return stages, heldout, planned[-1]["dev"] if heldout else None


@command(PROG, on_interrupt=RESUMES)
def main(argv: list[str] | None = None) -> int:
    from orca_judge.checkpoint import update_metrics
    from orca_judge.judge import OrcaJudge
    from orca_judge.report import agreement_report
    from orca_judge.training.curriculum import train_curriculum

    args = build_parser().parse_args(argv)
    if problem := (
        number_problem("--keep-evaluations", args.keep_evaluations, minimum=0)
        or number_problem("--split-seed", args.split_seed, minimum=0)
    ):
        return fail(PROG, problem)
    # Checked here: 1.5 (or nan) would otherwise surface later as "dev set is empty", and 1
    # would hold out every dev question, leaving no dev set to stop on.
    if not 0 <= args.heldout_fraction < 1:
        return fail(
            PROG,
            "--heldout-fraction: expected a share of the dev questions with 0 <= "
            f"--heldout-fraction < 1, got {args.heldout_fraction!r}",
        )
    try:
        stages, heldout, heldout_source = _load_stages(args)
        results = train_curriculum(
            stages,
            args.output,
            run_dir=args.run_dir,
            overwrite=args.overwrite,
            device=args.device,
            progress=not args.no_progress,
            keep_evaluations=args.keep_evaluations,
        )
        summary: dict[str, Any] = {
            "checkpoint": str(args.output),
            "stages": [{"name": s.name, **r.metrics} for s, r in zip(stages, results, strict=True)],
        }
        if len(stages) > 1:
            # the final checkpoint names the data of every stage it descends from
            curriculum = [
                {k: stage[k] for k in ("name", "data", "train_items", "dev_items", "best_step")}
                for stage in summary["stages"]
            ]
            update_metrics(args.output, {"curriculum": curriculum})
        if heldout:
            judge = OrcaJudge.from_pretrained(args.output, device=args.device)
            preds = judge.score(heldout, progress=not args.no_progress)
            summary["heldout"] = {
                "source": heldout_source,
                "items": len(heldout),
                "questions": stages[-1].provenance["heldout_questions"],
                "ids": [it.id for it in heldout],
                **agreement_report(preds, heldout),
            }
            update_metrics(args.output, {"heldout": summary["heldout"]})
    except (ValueError, FloatingPointError) as err:
        return fail(PROG, str(err))
    if args.json:
        print(json.dumps(summary, indent=2, sort_keys=True))
    else:
        for stage in summary["stages"]:
            dev = stage["dev"]
            print(
                f"{stage['name']}: best step {stage['best_step']}/{stage['steps']}  dev rho "
                f"{dev['rho']:.3f} tau {dev['tau']:.3f} MAE_mu {dev['mae_mu']:.3f}  clamp "
                f"threshold {stage['clamp_threshold']}"
            )
        for stage in summary["stages"]:
            data = stage["data"]
            built = " rule-rated candidates built from" if data.get("train_synthesized") else ""
            print(
                f"data of {stage['name']}: train{built} {data['train_file']} "
                f"({stage['train_items']} items), dev {data['dev_file']} ({stage['dev_items']} "
                "items)"
            )
        if "heldout" in summary:
            held = summary["heldout"]
            print(
                f"held-out: {held['items']} items on {held['questions']} questions of "
                f"{held['source']}:",
                json.dumps(held.get("raw", {})),
            )
        print(f"checkpoint: {args.output}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
