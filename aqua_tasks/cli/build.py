"""`aqua build`: write AQUA's four question types for a multiple-choice audio benchmark."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.build.api import (
    GENERATORS,
    MMAU_OUTPUT,
    SOURCES,
    GeneratorSettings,
    build_items,
    file_source,
    make_generator,
)
from aqua_tasks.build.builder import BuildConfig, manifest_path
from aqua_tasks.build.categories import default_bank
from aqua_tasks.build.source import ANSWER_FORMATS, MMAU_FIELDS, FieldMap, read_source
from eval_common.cli import (
    RESUMES,
    add_json_flag,
    add_progress_flag,
    add_seed_flag,
    command,
    fail,
    flags_problem,
    progress,
)
from eval_common.outputs import check_output_file

PROG = "aqua build"


def build_parser() -> argparse.ArgumentParser:
    """The `aqua build` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Turn a multiple-choice audio benchmark into AQUA-Bench's four types "
        "(Solvable, AAD, IASD, IAQD) in the released layout, with a build manifest beside "
        "it (docs/build.md).",
    )
    parser.add_argument(
        "--source",
        choices=SOURCES,
        default="mmau",
        help="mmau: MMAU's JSON; mc: JSON/JSONL with the field flags below; "
        "hf: a Hugging Face dataset (folder or id) (default: mmau)",
    )
    parser.add_argument("--input", required=True, help="source file, or dataset for --source hf")
    parser.add_argument("--output", required=True, help="folder to write the built file to")
    parser.add_argument(
        "--name", help=f"output file name (default for mmau: {MMAU_OUTPUT}; required otherwise)"
    )
    fields = parser.add_argument_group("source fields (--source mc and hf)")
    for part in ("id", "audio", "question", "choices", "answer"):
        fields.add_argument(
            f"--{part}-field",
            default=getattr(MMAU_FIELDS, part),
            help=f"field holding the {part} (default: %(default)s)",
        )
    fields.add_argument(
        "--answer-format",
        choices=ANSWER_FORMATS,
        default="text",
        help="the answer is the choice's text, letter or 0-based index",
    )
    fields.add_argument("--split", default="test", help="dataset split (--source hf)")
    iaqd = parser.add_argument_group("IAQD generator")
    iaqd.add_argument(
        "--iaqd",
        choices=GENERATORS,
        default="template",
        help="template: offline rules (default); openai: an OpenAI-compatible "
        "endpoint; hf: a local chat model",
    )
    iaqd.add_argument(
        "--base-url",
        default="",
        help="chat-completions URL (openai), e.g. http://localhost:8000/v1/chat/completions",
    )
    iaqd.add_argument("--model", default="", help="model name (openai) or local folder (hf)")
    iaqd.add_argument(
        "--cache-dir", help="reply cache folder (default: $AQUA_CACHE_DIR/build-iaqd)"
    )
    iaqd.add_argument(
        "--max-attempts",
        type=int,
        default=3,
        help="replies asked per item before the template stands in (default: 3)",
    )
    iaqd.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="requests in flight at once to the --iaqd openai endpoint; the output is the "
        "same at any value (default: 4)",
    )
    iaqd.add_argument(
        "--max-tokens",
        type=int,
        help="longest reply the model may write, in tokens (openai max_tokens, hf "
        "max_new_tokens; default: 400)",
    )
    layout = parser.add_argument_group("layout")
    layout.add_argument(
        "--iasd-options",
        type=int,
        default=3,
        help="mismatched IASD options before 'None of the above' (default: 3)",
    )
    layout.add_argument("--guidance", help="a sentence appended after every question's options")
    layout.add_argument("--limit", type=int, help="build only the first N source items")
    add_seed_flag(parser)
    add_json_flag(parser, "print the build manifest's counts as JSON")
    add_progress_flag(parser)
    return parser


@command(PROG, on_interrupt=RESUMES)
def main(argv: Sequence[str] | None = None) -> int:
    """Run `aqua build`."""
    args = build_parser().parse_args(argv)
    name = args.name or (MMAU_OUTPUT if args.source == "mmau" else None)
    if name is None:
        return fail(PROG, f"--source {args.source} needs --name (the output file name)")
    numbers = (
        ("--limit", args.limit),
        ("--concurrency", args.concurrency),
        ("--max-tokens", args.max_tokens),
    )
    for flag, value in numbers:
        if value is not None and value < 1:
            return fail(PROG, f"{flag} {value}: expected 1 or more")
    if problem := flags_problem(args, max_attempts=1, iasd_options=2, seed=0):
        return fail(PROG, problem)
    try:
        if Path(args.output).exists() and not Path(args.output).is_dir():
            return fail(PROG, f"--output {args.output} is a file; name the folder to write to")
        target = Path(args.output) / name
        inputs = [args.input if args.source != "hf" else None, args.cache_dir]
        for path in (target, manifest_path(target)):
            check_output_file(path, inputs=inputs, flag="--output/--name")
        fields = FieldMap(
            args.id_field,
            args.audio_field,
            args.question_field,
            args.choices_field,
            args.answer_field,
            args.answer_format,
        )
        settings = GeneratorSettings(
            base_url=args.base_url,
            model=args.model,
            cache_dir=args.cache_dir,
            max_attempts=args.max_attempts,
            concurrency=args.concurrency,
            max_tokens=args.max_tokens,
        )
        options = {
            # Made first: a generator's bad settings stop the run before any reading.
            "generator": make_generator(args.iaqd, settings, default_bank()),
            "config": BuildConfig(
                seed=args.seed, iasd_options=args.iasd_options, guidance=args.guidance
            ),
        }
        if args.source == "hf":
            from aqua_tasks.build.source import read_hf_dataset

            items = read_hf_dataset(args.input, args.split, fields, args.audio_field)
            source = {"dataset": args.input, "split": args.split, "fields": fields.__dict__}
        else:
            items = read_source(args.input, fields)
            source = file_source(args.input, fields, args.limit)
        items = items[: args.limit]
        with progress(None, PROG, not args.no_progress, total=len(items)) as bar:
            result = build_items(
                items, Path(args.output) / name, source=source, on_item=bar.update, **options
            )
    except (ValueError, OSError) as error:
        return fail(PROG, str(error))
    output = Path(args.output) / name
    manifest = result.manifest
    if args.json:
        keys = ("counts", "skipped", "repaired", "noted", "iaqd", "iaqd_failures")
        report = {
            "output": str(output),
            "manifest": str(manifest_path(output)),
            **{k: manifest[k] for k in keys},
        }
        print(json.dumps(report, indent=2))
        return 0
    counts = manifest["counts"]
    skipped = ", ".join(f"{n} {why}" for why, n in manifest["skipped"].items()) or "none"
    print(
        f"{output}: {counts['built_clips']} clips ({counts['entries']} questions) from "
        f"{counts['source_items']} items; skipped: {skipped}"
    )
    iaqd = manifest["iaqd"]
    if iaqd.get("fallback_to_template"):
        print(
            f"IAQD: {iaqd['fallback_to_template']} items fell back to the template", file=sys.stderr
        )
    print(f"manifest: {manifest_path(output)}")
    return 0
