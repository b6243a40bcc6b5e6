"""The extractor's cold start: a fresh process reading its first reply, today vs a git commit.

Every `lm_eval` run, `aqua score` and lmms-eval run reads its first reply in a fresh process, so
whatever the extractor builds on first use (its compiled rules, the lexicon's patterns) is
paid once per run. Each child imports `aqua-rules`, then reads one reply; the time from
before the import to after the reply is the cold start. Today's code and the extractor
package at `--baseline-ref` (default: the last commit that compiled each Korean word's guards
separately, ≈ 2.7 s of regex compilation per process) run in alternating children; medians and
their ratio. Two replies: an English one (the lexicon's languages are spotted, none glossed)
and a Korean one (the Korean patterns are used).

    python benchmarks/bench_extract_coldstart.py [--repeats 7] [--baseline-ref REF] [--json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

from rules_from_git import rules_from_git

# The commit before the Korean guards were grouped (aqua-rules 3.2 then as now).
BASELINE_REF = "de11258"
OPTIONS = ["Dog", "Cat", "Cow", "None of the above"]
REPLIES = {
    "english": "The recording has a dog barking twice, so the answer is (A) Dog.",
    "korean": "녹음에서 개가 짖는 소리가 들립니다. 정답은 A 입니다.",
}
CHILD = """
import json, sys, time
t0 = time.perf_counter()
sys.path.insert(0, sys.argv[1]) if sys.argv[1] else None
import importlib
rules = importlib.import_module(sys.argv[2])
t1 = time.perf_counter()
found = rules.extract_aqua_rules(sys.argv[3], json.loads(sys.argv[4]))
t2 = time.perf_counter()
print(json.dumps({"import_s": t1 - t0, "first_reply_s": t2 - t1, "total_s": t2 - t0,
                  "choice": found.choice}))
"""


def _child(path: str, module: str, reply: str) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CHILD, path, module, reply, json.dumps(OPTIONS)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(done.stdout)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7, help="children per variant and reply")
    parser.add_argument("--baseline-ref", default=BASELINE_REF, help="git commit to compare to")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.repeats < 1:
        parser.error(f"--repeats must be at least 1, got {args.repeats}")
    commit, baseline = rules_from_git("3.2", args.baseline_ref)
    variants = {
        "today": ("", "aqua_tasks.core.extract.rules"),
        f"at {commit}": (str(Path(baseline.__file__).parents[1]), baseline.__name__),
    }
    report: dict[str, dict] = {}
    for kind, reply in REPLIES.items():
        times: dict[str, list[dict]] = {name: [] for name in variants}
        for _ in range(args.repeats):  # interleaved: load changes hit both alike
            for name, (path, module) in variants.items():
                times[name].append(_child(path, module, reply))
        choices = {name: {t["choice"] for t in runs} for name, runs in times.items()}
        if len({frozenset(c) for c in choices.values()}) != 1:
            raise SystemExit(f"{kind}: the variants read the reply differently: {choices}")
        medians = {
            name: {
                key: statistics.median(t[key] for t in runs) for key in runs[0] if key != "choice"
            }
            for name, runs in times.items()
        }
        today, then = medians["today"]["total_s"], medians[f"at {commit}"]["total_s"]
        report[kind] = {"medians": medians, "ratio": today / then, "choice": choices["today"].pop()}
    if args.json:
        print(json.dumps({"baseline": commit, "repeats": args.repeats, "replies": report}))
        return 0
    print(f"extractor cold start, median of {args.repeats} fresh processes (baseline {commit})")
    print("| reply | today: import + first reply | baseline | ratio |")
    print("|---|---|---|---|")
    for kind, row in report.items():
        now, then = row["medians"]["today"], row["medians"][f"at {commit}"]
        print(
            f"| {kind} | {now['import_s']:.2f} + {now['first_reply_s']:.2f} s | "
            f"{then['import_s']:.2f} + {then['first_reply_s']:.2f} s | ×{row['ratio']:.2f} |"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())
