"""`aqua audio`: check that the AQUA-Bench clips are findable, and prepare them at 16 kHz mono."""

from __future__ import annotations

import argparse
import json
from collections.abc import Mapping, Sequence

from aqua_tasks.audio.clips import AudioRoots, fix_hint
from aqua_tasks.audio.prepare import (
    SOURCE_TRACKS,
    PrepareReport,
    TrackCheck,
    check_track_audio,
    prepare_audio,
)
from aqua_tasks.core.data import KNOWN_TRACKS, TRACKS, VARIANT_SUFFIXES, check_track
from eval_common.cli import RESUMES, add_json_flag, add_progress_flag, command

PROG = "aqua audio"
LISTED = 10


def _tracks(value: str) -> list[str]:
    tracks = [t.strip() for t in value.split(",") if t.strip()]
    if not tracks:
        raise argparse.ArgumentTypeError("expected a comma-separated list of tracks")
    try:
        return list(dict.fromkeys(check_track(t) for t in tracks))
    except ValueError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def build_parser() -> argparse.ArgumentParser:
    """The `aqua audio` argument parser."""
    parser = argparse.ArgumentParser(
        prog=PROG,
        description="Check that the AQUA-Bench audio clips are findable, or prepare them "
        "from the source datasets as 16 kHz mono WAV (layout: docs/audio.md).",
    )
    commands = parser.add_subparsers(dest="command", required=True)

    check = commands.add_parser(
        "check",
        help="list referenced clips that are missing or unreadable",
        description="Resolve every clip the released questions reference, as the tasks do, "
        "and list those missing or unreadable. Exit 1 if any.",
    )
    check.add_argument("--data-dir", required=True, help="folder of the released JSON files")
    check.add_argument("--audio-root", help="root searched for every track (metadata audio_root)")
    # Every track, the built MMAU one too: the fix line names the flag of the track checked.
    for track in KNOWN_TRACKS:
        check.add_argument(
            f"--{track}-audio-root", help=f"root for the {track} track (overrides --audio-root)"
        )
    check.add_argument(
        "--tracks",
        type=_tracks,
        default=list(TRACKS),
        help=f"comma-separated tracks to check (default: {','.join(TRACKS)})",
    )
    check.add_argument("--variant", default="main", choices=list(VARIANT_SUFFIXES))
    add_json_flag(check, "print a JSON report")
    add_progress_flag(check)

    prepare = commands.add_parser(
        "prepare",
        help="write a source dataset's clips as 16 kHz mono WAV in the canonical layout",
        description="Decode, downmix and resample a source dataset's clips into the "
        "canonical layout under --audio-root. Existing files are kept unless --overwrite.",
    )
    prepare.add_argument("--source", required=True, choices=list(SOURCE_TRACKS))
    prepare.add_argument(
        "--from",
        dest="source_path",
        required=True,
        metavar="PATH_OR_HF_ID",
        help="local copy of the source dataset, a folder saved by datasets' save_to_disk, "
        "or a Hugging Face dataset id (e.g. ashraq/esc50)",
    )
    prepare.add_argument("--audio-root", required=True, help="root to write the layout under")
    prepare.add_argument(
        "--data-dir", help="only write the clips the released questions (in this folder) use"
    )
    prepare.add_argument("--variant", default="main", choices=list(VARIANT_SUFFIXES))
    prepare.add_argument("--overwrite", action="store_true", help="rewrite existing files")
    prepare.add_argument(
        "--name-column", help="dataset column holding the clips' file names (default: guessed)"
    )
    add_json_flag(prepare, "print a JSON report")
    add_progress_flag(prepare)
    return parser


def _print_check(results: Sequence[TrackCheck]) -> None:
    for result in results:
        rates = ", ".join(f"{n} at {rate} Hz" for rate, n in sorted(result.sample_rates.items()))
        print(
            f"{result.track}: {result.referenced} referenced, {result.found} found, "
            f"{len(result.missing)} missing (root: {result.root or 'none'})"
            + (f"; {rates}" if rates else "")
        )
        for missing in result.missing[:LISTED]:
            print(f"  {missing.reason}: {missing.audio_filename}")
        if len(result.missing) > LISTED:
            print(f"  ... and {len(result.missing) - LISTED} more (--json lists all)")
        if result.missing:
            print(f"  tried (first missing): {', '.join(result.missing[0].tried)}")
            flags = f"--audio-root or --{result.track}-audio-root"
            print(f"  fix: {fix_hint(result.track)} Here: {flags}.")


def _print_prepare(report: PrepareReport) -> None:
    print(
        f"{report.source} -> {report.track}: {report.wanted} wanted, {report.written} written, "
        f"{report.skipped} skipped (already present), {len(report.not_found)} not found in "
        f"source, {len(report.failed)} unreadable in source"
    )
    print(f"layout: {report.layout}")
    for line in (report.not_found + report.failed)[:LISTED]:
        print(f"  missing: {line}")
    if len(report.not_found) + len(report.failed) > LISTED:
        print("  ... (--json lists all)")


def _run(args: argparse.Namespace) -> int:
    if args.command == "check":
        settings: Mapping[str, str | None] = {
            "audio_root": args.audio_root,
            **{f"{t}_audio_root": getattr(args, f"{t}_audio_root") for t in KNOWN_TRACKS},
        }
        roots = AudioRoots.from_settings(settings)
        results = [
            check_track_audio(args.data_dir, t, roots, args.variant, not args.no_progress)
            for t in args.tracks
        ]
        ok = all(not r.missing for r in results)
        if args.json:
            payload = {"ok": ok, "variant": args.variant}
            print(json.dumps({**payload, "tracks": {r.track: r.to_json() for r in results}}))
        else:
            _print_check(results)
        return 0 if ok else 1
    report = prepare_audio(
        args.source,
        args.source_path,
        args.audio_root,
        data_dir=args.data_dir,
        variant=args.variant,
        overwrite=args.overwrite,
        name_column=args.name_column,
        progress=not args.no_progress,
    )
    if args.json:
        print(json.dumps({"ok": report.ok, **report.to_json()}))
    else:
        _print_prepare(report)
    return 0 if report.ok else 1


# Unreadable question files, missing folders and bad sources: one line each (the wrapper says it).
@command(PROG, on_interrupt=RESUMES, errors=(ValueError, OSError))
def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of `aqua audio`; returns the exit status."""
    return _run(build_parser().parse_args(argv))
