"""Size of lm-eval's `--log_samples` file for one released track (1440 items).

Runs `aqua eval --model aqua-first-option --tasks aqua_<track> --log_samples` on stand-in
audio (one-word replies), then reports the file's bytes and a breakdown per sample field.
The baselines, measured in the same run, are the same file rewritten in the layouts written
before: each doc carrying the whole run manifest (from the results file) and no clip index,
and each AQUA metric value the 5-entry [clip, type, correct, parsed, excluded] list
("list layout") or the per-item dict with id, choice and reason ("dict layout", 0.1.0).
Everything else in each line is kept as written.

    python benchmarks/bench_samples_size.py --data-dir ../shared/data/aqua-bench [--json]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from collections import Counter
from pathlib import Path

import numpy as np
import soundfile as sf

BIN = Path(sys.executable).parent


def make_audio(data_dir: Path, track: str, root: Path) -> None:
    """A 0.1 s tone for every clip of the track, at its resolved path."""
    from aqua_tasks.audio.clips import canonical_relpath
    from aqua_tasks.core.data import load_items

    rng = np.random.default_rng(0)
    for item in load_items(data_dir, track):
        path = root / canonical_relpath(track, item.audio_filename)
        if path.exists():
            continue
        path.parent.mkdir(parents=True, exist_ok=True)
        t = np.arange(1600) / 16000
        sf.write(
            path, (0.2 * np.sin(2 * np.pi * rng.uniform(100, 2000) * t)).astype(np.float32), 16000
        )


def run_track(data_dir: Path, track: str, work: Path) -> tuple[Path, dict]:
    """The samples file of one aqua eval run of the track, and its task's recorded manifest."""
    audio = work / "audio"
    make_audio(data_dir, track, audio)
    metadata = json.dumps({"data_dir": str(data_dir), "audio_root": str(audio)})
    out = work / "run"
    proc = subprocess.run(
        [
            str(BIN / "aqua"),
            "eval",
            "--model",
            "aqua-first-option",
            "--tasks",
            f"aqua_{track}",
            "--metadata",
            metadata,
            "--output_path",
            str(out),
            "--log_samples",
        ],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        sys.exit(f"aqua eval failed: {proc.stderr[-2000:]}")
    (samples,) = out.rglob("samples_*.jsonl")
    (results,) = out.rglob("results_*.json")
    configs = json.loads(results.read_text(encoding="utf-8"))["configs"]
    return samples, configs[f"aqua_{track}"]["metadata"]["aqua_manifest"]


def _line_bytes(sample: dict) -> int:
    # lm-eval writes each sample with json.dumps(..., ensure_ascii=False) plus a newline.
    return len((json.dumps(sample, ensure_ascii=False) + "\n").encode())


def old_layouts(sample: dict, manifest: dict) -> tuple[dict, dict]:
    """The sample as the list layout and as the dict layout wrote it."""
    from aqua_tasks.core.docs import doc_to_item
    from aqua_tasks.core.scoring import item_outcome, metric_value, score_reply

    doc = {k: v for k, v in sample["doc"].items() if k != "clip_index"}
    # The manifest sat between audio_error and exclude_defective in every doc.
    flag = doc.pop("exclude_defective")
    doc = doc | manifest | {"exclude_defective": flag}
    verdict = score_reply(
        doc_to_item(doc),
        sample["filtered_resps"][0],
        extractor=doc["extractor"],
        exclude_defective=bool(flag),
    )
    as_list = list(item_outcome(verdict))
    as_dict = metric_value(verdict) | {"choice": verdict.choice, "reason": verdict.reason}
    return (
        sample | {"doc": doc} | dict.fromkeys(sample["metrics"], as_list),
        sample | {"doc": doc} | dict.fromkeys(sample["metrics"], as_dict),
    )


def measure(samples: Path, manifest: dict) -> dict:
    """Bytes of the file, per top-level field, and of the earlier layouts of the same lines."""
    fields: Counter[str] = Counter()
    metric_names: set[str] = set()
    list_total = dict_total = new_total = n = 0
    for line in samples.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        n += 1
        metric_names.update(sample["metrics"])
        new_total += _line_bytes(sample)
        for key, value in sample.items():
            # `{"key": value}`: its braces stand for the ", " that joins the field to its line.
            fields[key] += len(json.dumps({key: value}, ensure_ascii=False).encode())
        as_list, as_dict = old_layouts(sample, manifest)
        list_total += _line_bytes(as_list)
        dict_total += _line_bytes(as_dict)
    return {
        "samples": n,
        "bytes": new_total,
        "file_bytes": samples.stat().st_size,
        "list_layout_bytes": list_total,
        "dict_layout_bytes": dict_total,
        "ratio_new_to_list_layout": new_total / list_total,
        "ratio_new_to_dict_layout": new_total / dict_total,
        "metric_value_bytes": sum(v for k, v in fields.items() if k in metric_names),
        "fields": dict(fields.most_common()),
    }


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, required=True, help="released AQUA-Bench files")
    parser.add_argument("--track", default="animal", help="track to run (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the figures as JSON")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as tmp:
        figures = measure(*run_track(args.data_dir.resolve(), args.track, Path(tmp)))
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    mb = 1e6
    print(f"aqua_{args.track}: {figures['samples']} samples")
    print(f"  samples file:             {figures['bytes'] / mb:.2f} MB")
    print(f"  same run, list layout:    {figures['list_layout_bytes'] / mb:.2f} MB")
    print(f"  same run, dict layout:    {figures['dict_layout_bytes'] / mb:.2f} MB")
    print(f"  new / list layout:        {figures['ratio_new_to_list_layout']:.2f}")
    print(f"  new / dict layout:        {figures['ratio_new_to_dict_layout']:.2f}")
    print(f"  all AQUA metric values:   {figures['metric_value_bytes'] / mb:.2f} MB")
    print("  bytes per field (whole file):")
    for key, size in figures["fields"].items():
        print(f"    {key:<16} {size:>10,}")


if __name__ == "__main__":
    main()
