"""`orca-replay` for lmms-eval: answers each doc with the candidate saved for its id.

The lmms-eval counterpart of `orca_judge.lm_eval.human.OrcaReplayLM`: with an ORCA JSONL
(id, question, reference, rationale, transcript, candidate, ratings) as the task's docs and
as the answers, `metric: orca` judges exactly the answers the humans rated.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from lmms_eval.api.model import lmms

from ..data import load_items

logger = logging.getLogger(__name__)


class OrcaReplayLMMS(lmms):
    """Replays the candidate saved for each request's doc id in an ORCA JSONL file."""

    # What lmms-eval's CLI passes every model (ignored: nothing is computed).
    HARNESS_ARGS = frozenset({"batch_size", "max_batch_size", "device"})

    def __init__(self, path: str | None = None, **kwargs: Any) -> None:
        super().__init__()
        unknown = sorted(set(kwargs) - self.HARNESS_ARGS)
        if unknown:
            raise ValueError(f"orca-replay: unknown model_args {', '.join(unknown)}")
        if not path:
            raise ValueError("orca-replay needs the answers: --model_args path=ITEMS.jsonl")
        self.path = str(path)
        self.candidates = {item.id: item.candidate for item in load_items(self.path)}

    def _doc_id(self, request: Any) -> str:
        # lmms-eval's generate_until arguments: context, gen_kwargs, doc_to_visual, doc_id,
        # task, split; the docs are in self.task_dict, filled by simple_evaluate.
        _, _, _, doc_id, task, split = request.args[:6]
        doc = self.task_dict[task][split][doc_id]
        return str(doc.get("id")) if isinstance(doc, Mapping) else ""

    def generate_until(self, requests: list) -> list[str]:
        """The saved candidate of every request's doc; fails naming ids without one."""
        logger.info("orca-replay: answering %d requests from %s", len(requests), self.path)
        ids = [self._doc_id(r) for r in requests]
        missing = [i for i in ids if i not in self.candidates]
        if missing:
            raise ValueError(
                f"orca-replay: {len(missing)} docs have no candidate in {self.path} "
                f"(e.g. {', '.join(missing[:5])}); answers are matched by the doc's 'id'"
            )
        return [self.candidates[i] for i in ids]

    def loglikelihood(self, requests: list) -> list:
        """Not supported: replayed answers are generations."""
        raise NotImplementedError("orca-replay supports only generate_until tasks")

    def generate_until_multi_round(self, requests: list) -> list:
        """Not supported: one saved answer per doc."""
        raise NotImplementedError("orca-replay supports only generate_until tasks")
