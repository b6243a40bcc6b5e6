"""Requests for released items as lm-eval builds them, shared by the model-class tests."""

from __future__ import annotations

import pytest
from lm_eval.api.instance import Instance

from aqua_tasks.task.definition import build_docs, doc_to_audio, doc_to_text

GEN_KWARGS = {"until": [], "max_gen_toks": 64, "do_sample": False, "temperature": 0.0}


@pytest.fixture(scope="module")
def requests(released_dir, released_audio_root) -> list[Instance]:
    """Requests for the first two animal items, as lm-eval builds them."""
    docs = build_docs(
        "animal", data_dir=str(released_dir), settings={"audio_root": str(released_audio_root)}
    )[:2]
    return [
        Instance(
            request_type="generate_until",
            doc=doc,
            arguments=(doc_to_text(doc), dict(GEN_KWARGS), {"audio": doc_to_audio(doc)}),
            idx=0,
            metadata=("aqua_animal", n, 1),
        )
        for n, doc in enumerate(docs)
    ]
