"""Baseline and replay models for AQUA tasks (registered by name from `eval_plugins.names`)."""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Mapping

from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from tqdm import tqdm

from aqua_tasks.core.open_ended import ABSTENTION_REFERENCE
from aqua_tasks.errors import ModelArgumentError
from aqua_tasks.models.model_args import bounded_int, refuse_unknown
from aqua_tasks.runs import read_run, require_aqua_items

logger = logging.getLogger(__name__)

# What `aqua-always-reject` says to an open-ended question: the abstention reference itself.
OPEN_ABSTENTION = ABSTENTION_REFERENCE


def _option_reply(doc: Mapping, index: int) -> str:
    return f"({chr(ord('a') + index)}) {doc['options'][index]}"


def _doc(request: Instance) -> Mapping:
    doc = request.doc
    if not isinstance(doc, Mapping) or not ("options" in doc or is_open_doc(doc)):
        raise ValueError(
            f"task {request.task_name!r} doc {request.doc_id}: AQUA baseline models answer only "
            "aqua_* and aqua-open_* tasks (their docs carry the options or the class names)"
        )
    return doc


def is_open_doc(doc: Mapping) -> bool:
    """Whether a doc is one of an open-ended AQUA task (no options; the class names hidden)."""
    return doc.get("form") == "open" and "classes" in doc


def _class_name(doc: Mapping, index: int) -> str:
    classes = list(doc["classes"])
    if not classes:
        raise ValueError(f"aqua-open item {doc['id']}: its clip has no class names to answer")
    return classes[index % len(classes)]


class AquaBaselineLM(LM):
    """A deterministic 'model' that answers from the doc, never from the audio."""

    MULTIMODAL = True  # lm-eval refuses audio tasks for models without this flag
    # Arguments lm-eval passes to every model; meaningless for a baseline.
    HARNESS_ARGS = frozenset({"batch_size", "max_batch_size", "device"})

    NAME = "aqua-baseline"  # the registered name, set on each subclass
    OWN_ARGS: tuple[str, ...] = ()  # model arguments of the subclass's own

    def __init__(self, **kwargs: object) -> None:
        super().__init__()
        refuse_unknown(self.NAME, set(kwargs) - self.HARNESS_ARGS, self.OWN_ARGS)

    @classmethod
    def check_model_args(cls, arg_dict: dict, additional_config: dict | None = None) -> None:
        """ModelArgumentError for the first bad model argument (building a baseline is cheap)."""
        cls.create_from_arg_obj(arg_dict, additional_config)

    def answer(self, request: Instance) -> str:
        """The reply to one request."""
        raise NotImplementedError

    @property
    def tokenizer_name(self) -> str:
        """Name lm-eval records for --apply_chat_template runs."""
        return type(self).__name__

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """A plain role-prefixed transcript (baselines answer from the doc, not the prompt)."""
        turns = [f"{turn['role']}: {turn['content']}" for turn in chat_history]
        return "\n".join([*turns, "assistant:"] if add_generation_prompt else turns)

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Replies for all requests, in order."""
        return [self.answer(r) for r in tqdm(requests, disable=disable_tqdm, desc="answering")]

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: AQUA tasks are generative."""
        raise NotImplementedError(f"{type(self).__name__} supports only generate_until tasks")

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: AQUA tasks are generative."""
        raise NotImplementedError(f"{type(self).__name__} supports only generate_until tasks")


class AlwaysRejectLM(AquaBaselineLM):
    """Always answers the last option, where AQUA puts the rejection option; open: abstains."""

    NAME = "aqua-always-reject"

    def answer(self, request: Instance) -> str:
        """The last option as '(e) text'; on an open-ended item, an abstention."""
        doc = _doc(request)
        if is_open_doc(doc):
            return OPEN_ABSTENTION
        return _option_reply(doc, len(doc["options"]) - 1)


class FirstOptionLM(AquaBaselineLM):
    """Always answers option (a)."""

    NAME = "aqua-first-option"

    def answer(self, request: Instance) -> str:
        """The first option as '(a) text'; on an open-ended item, the first class name."""
        doc = _doc(request)
        return _class_name(doc, 0) if is_open_doc(doc) else _option_reply(doc, 0)


class RandomOptionLM(AquaBaselineLM):
    """Answers a uniformly random option, reproducible per (seed, task, item)."""

    NAME = "aqua-random"
    OWN_ARGS = ("seed",)

    def __init__(self, seed: int | str = 0, **kwargs: object) -> None:
        super().__init__(**kwargs)
        self.seed = bounded_int("seed", seed)

    def answer(self, request: Instance) -> str:
        """A seeded random option; independent of batch order and --limit."""
        doc = _doc(request)
        rng = random.Random(f"{self.seed}|{request.task_name}|{doc['id']}")
        if is_open_doc(doc):
            return _class_name(doc, rng.randrange(max(len(doc["classes"]), 1)))
        return _option_reply(doc, rng.randrange(len(doc["options"])))


class ReplayLM(AquaBaselineLM):
    """Answers with replies saved earlier, looked up by task and item id."""

    NAME = "aqua-replay"
    OWN_ARGS = ("path", "data_dir")

    def __init__(
        self, path: str | None = None, data_dir: str | None = None, **kwargs: object
    ) -> None:
        super().__init__(**kwargs)
        if not path:
            raise ModelArgumentError(
                "aqua-replay needs the saved replies: --model_args path=RESULTS "
                "(an lm-eval --log_samples folder/file or the authors' results JSON; an "
                "lmms-eval one with data_dir=DATA, the released files it was made from)"
            )
        self.path = str(path)
        run = read_run(self.path, data_dir=data_dir or None)
        for note in run.notes:  # e.g. which data folder an lmms-eval log's items came from
            logger.warning("aqua-replay: %s", note)
        open_items = [r for r in run.items if r.item is None and is_open_doc(r.doc)]
        items = list(open_items) if open_items and not run.aqua_items else require_aqua_items(run)
        if run.aqua_items:
            items = [*run.aqua_items, *open_items]
        self.replies = {
            (r.task, int(r.doc["id"]) if r.item is None else r.item.id): r.reply for r in items
        }
        self.saved = Counter(task for task, _ in self.replies)

    def answer(self, request: Instance) -> str:
        """The saved reply of this task's item."""
        return self.replies[(request.task_name, int(_doc(request)["id"]))]

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Saved replies for all requests; fails naming the items that have none."""
        missing = [
            (r.task_name, int(_doc(r)["id"]))
            for r in requests
            if (r.task_name, int(_doc(r)["id"])) not in self.replies
        ]
        if missing:
            raise ModelArgumentError(self._missing_message(missing, len(requests)))
        return super().generate_until(requests, disable_tqdm)

    def _missing_message(self, missing: list[tuple[str, int]], requested: int) -> str:
        """One line: how many requested items the run lacks, which, and what to do."""
        shown = ", ".join(f"{task} id {item}" for task, item in missing[:5])
        tasks = sorted({task for task, _ in missing})
        saved = ", ".join(f"{task}: {self.saved.get(task, 0)}" for task in tasks)
        return (
            f"aqua-replay: path={self.path!r} has no saved reply for {len(missing)} of the "
            f"{requested} requested items (e.g. {shown}; saved items per task: {saved}); "
            "replay only what the saved run answered (the same --tasks and --limit) or give "
            "a run that holds every requested item"
        )
