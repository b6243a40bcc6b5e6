"""The LLM fallback (`extractor: aqua-rules+llm`) under lmms-eval: the same counts as lm-eval.

lmms-eval scores item by item, so each unparsed reply is read by its own request; the saved
replies and the stub reader are those of tests/lm_eval/test_fallback_lm_eval.py.
"""

from __future__ import annotations

import json

import pytest
from conftest import lmms_eval, lmms_results, lmms_samples
from fallback_fixtures import LIMIT, start_fallback_stub, write_fallback_replies
from support.chat_stub import stub_url

from eval_plugins.lmms_eval.aqua import include_path

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def run(released_dir, tmp_path_factory):
    root = tmp_path_factory.mktemp("lmms_fallback")
    saved = write_fallback_replies(released_dir, root)
    server, state = start_fallback_stub()
    settings = {"base_url": stub_url(server), "model": "stub-reader", "max_retries": 1}
    metadata = {
        "data_dir": str(released_dir),
        "audio": False,
        "extractor": "aqua-rules+llm",
        "fallback": settings,
    }
    env = {"AQUA_METADATA": json.dumps(metadata), "AQUA_CACHE_DIR": str(root / "cache")}
    try:
        done = lmms_eval(
            "--include_path", include_path(), "--model", "aqua-replay",
            "--model_args", f"path={saved}", "--tasks", "aqua_animal", "--limit", LIMIT,
            "--output_path", root / "out", "--log_samples", env=env,
        )  # fmt: skip
    finally:
        server.shutdown()
    assert done.returncode == 0, done.stderr[-4000:]
    return root / "out", state


def test_lmms_eval_counts_what_the_fallback_read_as_lm_eval_does(run):
    out, state = run
    row = lmms_results(out)["results"]["aqua_animal"]
    # ids 0 and 5 read as the gold option, id 1 as a rejection after its re-ask; id 9 failed.
    assert row["n_fallback,none"] == 3 and row["n_fallback_failed,none"] == 1
    assert row["unparsed_rate,none"] == pytest.approx(3 / LIMIT)
    read = {0: 7, 1: 4, 5: 9, 9: 1, 13: 2, 17: 0}  # logged readings (see extract.fallback)
    samples = lmms_samples(out, "aqua_animal")
    assert {s["doc_id"]: s["n_fallback"] for s in samples if s["n_fallback"]} == {
        k: v for k, v in read.items() if v
    }
    statuses = [r.status for r in state.requests]
    assert statuses.count(429) == 1 and statuses.count(500) == 2
