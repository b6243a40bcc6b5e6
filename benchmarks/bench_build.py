"""`aqua build` on MMAU test-mini (1000 items) with the template generator: wall time.

Reports the median over repeats of the whole build (read, build, write the file and its
manifest) and, as the floor measured in the same run, of only reading the source and writing
its items back as JSON: the difference is what the AQUA rules cost.

    python benchmarks/bench_build.py --input ../shared/data/mmau/mmau-test-mini.json [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

from aqua_tasks.build.api import MMAU_OUTPUT, build_file
from aqua_tasks.build.source import read_source


def timed(action, repeats: int) -> float:
    """Median seconds of `action()` over `repeats` runs."""
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        action()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--input", default="../shared/data/mmau/mmau-test-mini.json")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder)
        result = build_file(args.input, out)  # also warms the bank and the term caches

        def floor() -> None:
            items = read_source(args.input)
            (out / "floor.json").write_text(json.dumps([i.__dict__ for i in items], default=dict))

        build_s = timed(lambda: build_file(args.input, out), args.repeats)
        floor_s = timed(floor, args.repeats)
        size = (out / MMAU_OUTPUT).stat().st_size
    report = {
        "items": result.manifest["counts"]["source_items"],
        "entries": result.manifest["counts"]["entries"],
        "build_s": round(build_s, 3),
        "read_and_write_only_s": round(floor_s, 3),
        "items_per_s": round(result.manifest["counts"]["source_items"] / build_s),
        "output_bytes": size,
    }
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(
            f"{report['items']} items -> {report['entries']} questions: {build_s:.3f} s "
            f"({report['items_per_s']} items/s); reading and writing alone {floor_s:.3f} s"
        )


if __name__ == "__main__":
    main()
