"""A whole released track through `aqua eval` with a model that reads every clip.

Measures wall time and peak memory (max RSS) at two clip counts, for our lazily decoded
audio and, as the baseline measured in the same run, for eagerly decoded arrays (what a
`doc_to_audio` returning samples does: lm-eval builds and keeps every request before
inference). Lazy memory should stay flat in the number of clips; eager memory grows.

    python benchmarks/bench_track.py --data-dir ../shared/data/aqua-bench [--json]
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import soundfile as sf

TRACK = "animal"
CLIP_SECONDS = 5.0  # ESC-50 clips are 5 s at 44.1 kHz
CLIP_RATE = 44100


def make_audio(data_dir: Path, root: Path) -> None:
    """ESC-50-sized stand-in clips for every clip of the track, at their resolved paths."""
    from aqua_tasks.audio.clips import canonical_relpath
    from aqua_tasks.core.data import load_items

    rng = np.random.default_rng(0)
    for item in load_items(data_dir, TRACK)[::4]:
        path = root / canonical_relpath(TRACK, item.audio_filename)
        path.parent.mkdir(parents=True, exist_ok=True)
        noise = rng.normal(0, 0.1, int(CLIP_SECONDS * CLIP_RATE)).astype(np.float32)
        sf.write(path, noise, CLIP_RATE)


def child(data_dir: str, audio_root: str, limit: int, eager: bool) -> None:
    """One aqua eval run in this process; prints wall time and max RSS as JSON."""
    from aqua_tasks.audio.clips import load_audio
    from aqua_tasks.models.baselines import AquaBaselineLM
    from aqua_tasks.task import definition
    from eval_plugins.cli.aqua_eval import main
    from eval_plugins.lm_eval.registration import register_all

    class EnergyReaderLM(AquaBaselineLM):
        """Decodes each request's audio and answers by its loudness."""

        def answer(self, request):
            (audio,) = request.args[2]["audio"]
            loud = float(np.abs(audio["array"]).mean()) > 0.05
            return f"({'a' if loud else 'b'})"

    if eager:
        lazy = definition.doc_to_audio

        def eager_doc_to_audio(doc):
            (clip,) = lazy(doc)
            return [{"array": load_audio(clip["path"]), "sampling_rate": 16000}]

        # The YAML's !function is looked up when tasks are built, after this assignment.
        definition.doc_to_audio = eager_doc_to_audio
    register_all()
    from lm_eval.api.registry import register_model

    register_model("bench-energy-reader")(EnergyReaderLM)
    metadata = json.dumps({"data_dir": data_dir, "audio_root": audio_root})
    start = time.perf_counter()
    main(
        [
            "--model",
            "bench-energy-reader",
            "--tasks",
            f"aqua_{TRACK}",
            "--limit",
            str(limit),
            "--metadata",
            metadata,
        ]
    )
    wall = time.perf_counter() - start
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print("BENCH " + json.dumps({"wall_s": wall, "max_rss_mb": rss_mb}))


def measure(data_dir: Path, audio_root: Path, limit: int, eager: bool) -> dict:
    cmd = [sys.executable, __file__, "--child", str(data_dir), str(audio_root), str(limit)]
    proc = subprocess.run(
        [*cmd, "--eager"] if eager else cmd, capture_output=True, text=True, check=False
    )
    lines = [line for line in proc.stdout.splitlines() if line.startswith("BENCH ")]
    if proc.returncode != 0 or not lines:
        raise SystemExit(f"benchmark run failed:\n{proc.stderr[-3000:]}")
    return json.loads(lines[-1][len("BENCH ") :])


def main() -> int:
    if "--child" in sys.argv:
        _, _, data_dir, audio_root, limit, *rest = sys.argv
        child(data_dir, audio_root, int(limit), "--eager" in rest)
        return 0
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data-dir", type=Path, default=Path("../shared/data/aqua-bench"))
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory(prefix="aqua-bench-track-") as tmp:
        make_audio(args.data_dir, Path(tmp))
        for items in (360, 1440):  # 90 and 360 clips
            for eager in (False, True):
                row = measure(args.data_dir, Path(tmp), items, eager)
                rows.append(
                    {
                        "items": items,
                        "clips": items // 4,
                        "audio": "eager" if eager else "lazy",
                        **row,
                    }
                )
    by = {(r["items"], r["audio"]): r for r in rows}
    summary = {
        "rows": rows,
        "lazy_rss_growth_ratio_1440_vs_360": by[(1440, "lazy")]["max_rss_mb"]
        / by[(360, "lazy")]["max_rss_mb"],
        "eager_rss_growth_ratio_1440_vs_360": by[(1440, "eager")]["max_rss_mb"]
        / by[(360, "eager")]["max_rss_mb"],
        "eager_over_lazy_rss_at_1440": by[(1440, "eager")]["max_rss_mb"]
        / by[(1440, "lazy")]["max_rss_mb"],
        "lazy_over_eager_wall_at_1440": by[(1440, "lazy")]["wall_s"]
        / by[(1440, "eager")]["wall_s"],
    }
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print("| items | clips | audio | wall s | max RSS MB |\n|---|---|---|---|---|")
        for r in rows:
            print(
                f"| {r['items']} | {r['clips']} | {r['audio']} | {r['wall_s']:.1f} "
                f"| {r['max_rss_mb']:.0f} |"
            )
        for key, value in summary.items():
            if key != "rows":
                print(f"{key}: {value:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
