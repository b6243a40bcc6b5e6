"""The human-rated ORCA data as an lm-eval task (`orca_human`) and a model replaying its answers.

The task's docs are ORCA items (question, reference, rationale, transcript, ratings); the
"model" under test is `orca-replay`, which answers each doc with the candidate saved for its
id, so `metric: orca` judges exactly the answers the humans rated.
"""

from __future__ import annotations

from typing import Any

import datasets
from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from tqdm import tqdm

from orca_judge.data import load_items
from orca_judge.saved_candidates import SavedCandidates, doc_id_of

DATA_KEY = "orca_data"


def load_dataset(**kwargs: Any) -> datasets.DatasetDict:
    """`custom_dataset` of orca_human: the ORCA JSONL named by --metadata orca_data."""
    path = kwargs.get(DATA_KEY)
    if not path:
        raise ValueError(
            f'orca_human needs the rated items: --metadata \'{{"{DATA_KEY}": "dev.jsonl"}}\' '
            "(ORCA JSONL: id, question, reference, rationale, transcript, candidate, ratings)"
        )
    rows = [item.as_dict() for item in load_items(path, require_ratings=True)]
    return datasets.DatasetDict({"test": datasets.Dataset.from_list(rows)})


class OrcaReplayLM(LM):
    """Answers each request with the candidate saved for the doc's id in an ORCA JSONL file."""

    def __init__(self, path: str | None = None, **kwargs: object) -> None:
        super().__init__()
        self.saved = SavedCandidates(path, kwargs)

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """The saved candidate of every request's doc; fails naming ids without one."""
        answers = self.saved.answers([doc_id_of(r.doc) for r in requests])
        return list(tqdm(answers, disable=disable_tqdm))

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: replayed answers are generations."""
        raise NotImplementedError("orca-replay supports only generate_until tasks")

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: replayed answers are generations."""
        raise NotImplementedError("orca-replay supports only generate_until tasks")
