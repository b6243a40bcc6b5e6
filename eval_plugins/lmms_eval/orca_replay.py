"""`orca-replay` for lmms-eval: answers each doc with the candidate saved for its id.

The lmms-eval counterpart of `eval_plugins.lm_eval.orca_human.OrcaReplayLM`: with an ORCA JSONL
(id, question, reference, rationale, transcript, candidate, ratings) as the task's docs and
as the answers, `metric: orca` judges exactly the answers the humans rated.
"""

from __future__ import annotations

import logging
from typing import Any

from lmms_eval.api.model import lmms

from orca_judge.saved_candidates import SavedCandidates, doc_id_of

logger = logging.getLogger(__name__)


class OrcaReplayLMMS(lmms):
    """Replays the candidate saved for each request's doc id in an ORCA JSONL file."""

    def __init__(self, path: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        self.saved = SavedCandidates(path, kwargs)

    def _doc_id(self, request: Any) -> str:
        # lmms-eval's generate_until arguments: context, gen_kwargs, doc_to_visual, doc_id,
        # task, split; the docs are in self.task_dict, filled by simple_evaluate.
        _, _, _, doc_id, task, split = request.args[:6]
        return doc_id_of(self.task_dict[task][split][doc_id])

    def generate_until(self, requests: list) -> list[str]:
        """The saved candidate of every request's doc; fails naming ids without one."""
        logger.info("orca-replay: answering %d requests from %s", len(requests), self.saved.path)
        return self.saved.answers([self._doc_id(r) for r in requests])

    def loglikelihood(self, requests: list) -> list:
        """Not supported: replayed answers are generations."""
        raise NotImplementedError("orca-replay supports only generate_until tasks")

    def generate_until_multi_round(self, requests: list) -> list:
        """Not supported: one saved answer per doc."""
        raise NotImplementedError("orca-replay supports only generate_until tasks")
