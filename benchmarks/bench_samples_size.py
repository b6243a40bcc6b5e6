"""Size of lm-eval's `--log_samples` file for one released track (1440 items).

Runs `aqua-eval --model aqua-first-option --tasks aqua_<track> --log_samples` on stand-in
audio (one-word replies), then reports the file's bytes and a breakdown per sample field.
The baseline, measured in the same run, is the same file with every AQUA metric value
rewritten in the layout written before (the per-item dict with id, choice and reason,
repeated under each metric); everything else in each line is kept as written.

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
    from aqua_tasks.audio import canonical_relpath
    from aqua_tasks.data import load_items

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


def run_track(data_dir: Path, track: str, work: Path) -> Path:
    """The samples file of one aqua-eval run of the track."""
    audio = work / "audio"
    make_audio(data_dir, track, audio)
    metadata = json.dumps({"data_dir": str(data_dir), "audio_root": str(audio)})
    out = work / "run"
    proc = subprocess.run(
        [
            str(BIN / "aqua-eval"),
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
        sys.exit(f"aqua-eval failed: {proc.stderr[-2000:]}")
    (samples,) = out.rglob("samples_*.jsonl")
    return samples


def _line_bytes(sample: dict) -> int:
    # lm-eval writes each sample with json.dumps(..., ensure_ascii=False) plus a newline.
    return len((json.dumps(sample, ensure_ascii=False) + "\n").encode())


def old_layout_value(sample: dict) -> dict:
    """The per-item metric value as written before: the verdict dict with choice and reason."""
    from aqua_tasks.lm_eval_task import doc_to_item
    from aqua_tasks.scoring import metric_value, score_reply

    doc = sample["doc"]
    verdict = score_reply(
        doc_to_item(doc),
        sample["filtered_resps"][0],
        extractor=doc["extractor"],
        exclude_defective=bool(doc["exclude_defective"]),
    )
    return metric_value(verdict) | {"choice": verdict.choice, "reason": verdict.reason}


def measure(samples: Path) -> dict:
    """Bytes of the file, per top-level field, and of the old metric-value layout."""
    fields: Counter[str] = Counter()
    metric_names: set[str] = set()
    old_total = 0
    new_total = 0
    n = 0
    for line in samples.read_text(encoding="utf-8").splitlines():
        sample = json.loads(line)
        n += 1
        metric_names.update(sample["metrics"])
        new_total += _line_bytes(sample)
        for key, value in sample.items():
            # `{"key": value}`: its braces stand for the ", " that joins the field to its line.
            fields[key] += len(json.dumps({key: value}, ensure_ascii=False).encode())
        old_value = old_layout_value(sample)
        old_total += _line_bytes(sample | dict.fromkeys(sample["metrics"], old_value))
    return {
        "samples": n,
        "bytes": new_total,
        "file_bytes": samples.stat().st_size,
        "old_layout_bytes": old_total,
        "ratio_new_to_old": new_total / old_total,
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
        figures = measure(run_track(args.data_dir.resolve(), args.track, Path(tmp)))
    if args.json:
        print(json.dumps(figures, indent=2))
        return
    mb = 1e6
    print(f"aqua_{args.track}: {figures['samples']} samples")
    print(f"  samples file, new layout: {figures['bytes'] / mb:.2f} MB")
    print(f"  same run, old layout:     {figures['old_layout_bytes'] / mb:.2f} MB")
    print(f"  new / old:                {figures['ratio_new_to_old']:.2f}")
    print(f"  all AQUA metric values:   {figures['metric_value_bytes'] / mb:.2f} MB")
    print("  bytes per field (whole file):")
    for key, size in figures["fields"].items():
        print(f"    {key:<16} {size:>10,}")


if __name__ == "__main__":
    main()
