"""`metric: orca` in an lm-eval run of two processes: each process judges its own docs.

The open-ended AQUA task (judged by ORCA) runs with the tiny audio LM on real clips, once in
one process and once under `accelerate launch` with two gloo processes on CPU. The second
run's payloads carry predictions made on the process that held the doc (rank 0 aggregates
after the other has returned), and its figures and per-item judge file equal the first's.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from launchers import CPU_ENV, accelerate_two_processes
from open_fixtures import open_judge_checkpoint
from support.tiny_audio_lm import build_tiny_audio_lm

pytestmark = [pytest.mark.slow, pytest.mark.shared_data]
BIN = Path(sys.executable).parent
TASK = "aqua-open_animal"
DOCS = list(range(7))  # odd: the two processes hold 4 and 3 docs


@pytest.fixture(scope="module")
def runs(tmp_path_factory, released_dir, released_audio_root) -> dict[str, Path]:
    tmp = tmp_path_factory.mktemp("orca_processes")
    tiny = build_tiny_audio_lm(tmp / "tiny")
    judge = open_judge_checkpoint(released_dir)
    metadata = {
        "data_dir": str(released_dir),
        "audio_root": str(released_audio_root),
        "judge": str(judge),
        "orca": {"backbone": str(judge.parent / "backbone"), "device": "cpu"},
    }
    env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "AQUA_CACHE_DIR": str(tmp / "journal"),
    }
    launch = accelerate_two_processes(29700)
    out = {}
    for name, prefix, extra in (("one", [], {}), ("two", launch, CPU_ENV)):
        command = [
            *prefix,
            str(BIN / "aqua"),
            "eval",
            "--model",
            "aqua-audiolm",
            "--model_args",
            f"pretrained={tiny},batch_size=2,max_gen_toks=8,device=cpu",
            "--tasks",
            TASK,
            "--samples",
            json.dumps({TASK: DOCS}),
            "--metadata",
            json.dumps(metadata),
            "--log_samples",
            "--output_path",
            str(tmp / name),
        ]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=600, env={**env, **extra}
        )
        assert done.returncode == 0, done.stderr[-4000:]
        out[name] = tmp / name
    return out


def results_of(run: Path) -> dict:
    (path,) = sorted(run.rglob("results_*.json"))  # rank 0 writes alone
    return json.loads(path.read_text())


def judged_rows(run: Path) -> list[dict]:
    (path,) = sorted(run.rglob(f"orca_{TASK}_none_*.jsonl"))
    return [json.loads(line) for line in path.read_text().splitlines()]


def payload_of(sample: dict) -> dict:
    return next(v for v in sample.values() if isinstance(v, dict) and "orca_figure" in v)


def test_two_processes_give_the_figures_and_per_item_file_of_one(runs):
    one, two = results_of(runs["one"]), results_of(runs["two"])

    def figures(results: dict) -> dict:
        row = results["results"][TASK]
        return {k: v for k, v in row.items() if "," in k and "_stderr," not in k}

    want, got = figures(one), figures(two)
    assert set(got) == set(want) and got["n_items,none"] == len(DOCS)
    assert got == pytest.approx(want, rel=1e-5, abs=1e-6, nan_ok=True)
    rows_one, rows_two = judged_rows(runs["one"]), judged_rows(runs["two"])
    assert [r["inputs"] for r in rows_two] == [r["inputs"] for r in rows_one]
    assert len(rows_one) == len(DOCS)
    for a, b in zip(rows_one, rows_two, strict=True):
        assert b["expected_unit"] == pytest.approx(a["expected_unit"], abs=1e-5)
    assert one["configs"][TASK]["metadata"]["orca_inputs"]["processes"] == 1
    assert two["configs"][TASK]["metadata"]["orca_inputs"]["processes"] == 2


def test_each_process_judged_its_own_docs_where_it_held_them(runs):
    def samples(run: Path) -> list[dict]:
        (path,) = sorted(run.rglob(f"samples_{TASK}_*.jsonl"))
        return [json.loads(line) for line in path.read_text().splitlines()]

    # One process: the aggregation judges; two: every doc arrives at rank 0 judged already.
    assert all("scored" not in payload_of(s) for s in samples(runs["one"]))
    judged = {s["doc_id"]: payload_of(s) for s in samples(runs["two"])}
    assert sorted(judged) == DOCS
    for doc_id, payload in judged.items():
        assert payload["inputs"]["index"] == doc_id
        # Recorded under the doc's own id (open-ended AQUA docs have one), else its position.
        assert payload["scored"]["id"] == (payload["inputs"]["id"] or str(doc_id))
        assert 0 <= payload["scored"]["expected_unit"] <= 1
