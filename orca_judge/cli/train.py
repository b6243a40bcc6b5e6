"""orca train: fine-tune an ORCA judge on rated items (one stage, or a curriculum from YAML)."""

from __future__ import annotations

import argparse
import dataclasses
import json
from typing import Any

from eval_common.cli import (
    EXIT_BAD_INPUT,
    RESUMES,
    add_json_flag,
    add_progress_flag,
    bool_arg,
    command,
    fail,
    number_problem,
)
from orca_judge.config import OrcaConfig
from orca_judge.knobs import Knobs
from orca_judge.training.arguments import TrainingArguments
from orca_judge.training.heldout import heldout_fraction_problem
from orca_judge.training.plan import SETTING_FIELDS, plan_stages

PROG = "orca train"


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


def _add_knob_flags(group: Any, knobs: type[Knobs]) -> None:
    """One flag per field of `knobs` in an argparse argument group, with its help and default."""
    help_texts = knobs.field_help()
    for f in dataclasses.fields(knobs):
        kind = knobs.field_type(f.name)
        flag = "--" + f.name.replace("_", "-")
        if kind is list:
            group.add_argument(flag, nargs="+", default=None, help=help_texts[f.name])
        else:
            parse = {bool: bool_arg, int: int, float: float, str: str}[kind]
            group.add_argument(
                flag, type=_none_or(parse), default=None, help=help_texts[f.name] + _default_help(f)
            )


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        description=__doc__,
        epilog="Every OrcaConfig and TrainingArguments field is a flag; flags override values "
        "from --config YAML.",
    )
    io = parser.add_argument_group("data and output")
    io.add_argument("--train", help="training items (.jsonl / .json) with ratings")
    io.add_argument("--dev", help="dev items for early stopping and clamp tuning")
    io.add_argument("--output", required=True, help="checkpoint directory to write (best model)")
    io.add_argument(
        "--config",
        help="YAML with OrcaConfig and TrainingArguments fields, train/dev, and optional 'stages'",
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
        "<run-dir>/evaluations/step-NNNNNN (for orca average); default 0 keeps only the best",
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
    groups = (
        ("judge settings (OrcaConfig, recorded in the checkpoint)", OrcaConfig),
        ("training settings (TrainingArguments, saved beside it)", TrainingArguments),
    )
    for title, knobs in groups:
        _add_knob_flags(parser.add_argument_group(title), knobs)
    return parser


@command(PROG, on_interrupt=RESUMES)
def main(argv: list[str] | None = None) -> int:
    from orca_judge.processes import Processes, launched_group
    from orca_judge.training.curriculum import run_curriculum
    from orca_judge.training.plan import load_stages

    args = build_parser().parse_args(argv)
    try:
        launched = Processes.from_environment()
    except ValueError as err:
        return fail(PROG, str(err))
    if problem := (
        number_problem("--keep-evaluations", args.keep_evaluations, minimum=0)
        or number_problem("--split-seed", args.split_seed, minimum=0)
        or heldout_fraction_problem(args.heldout_fraction, "--heldout-fraction")
    ):
        return fail(PROG, problem)
    try:
        # Every setting flag is an override; unset ones (None) leave the YAML's value.
        overrides = {k: getattr(args, k) for k in SETTING_FIELDS}
        plans = plan_stages(
            args.config, train=args.train, dev=args.dev, data_dir=args.data_dir, overrides=overrides
        )
        curriculum = load_stages(
            plans,
            heldout_fraction=args.heldout_fraction,
            split_seed=args.split_seed,
            progress=not args.no_progress,
        )
        # Under torchrun / accelerate launch every rank runs this; rank 0 alone writes and prints.
        with launched_group(args.device) as processes:
            summary = run_curriculum(
                curriculum,
                args.output,
                run_dir=args.run_dir,
                overwrite=args.overwrite,
                device=args.device,
                progress=not args.no_progress,
                keep_evaluations=args.keep_evaluations,
                processes=processes,
            )
    except (ValueError, FloatingPointError) as err:
        if not launched.is_main:
            return EXIT_BAD_INPUT  # every rank stops with the same reason; rank 0 says it once
        return fail(PROG, str(err))
    if not launched.is_main:
        return 0
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
            if judge := data.get("train_rated_by"):
                built = (
                    f" rated by {judge['model']} ({judge['prompt_version']}: {judge['n_rated']} "
                    f"rated, {judge['n_failed']} failed judgements left out) from"
                )
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
