"""The candidate answers of an ORCA JSONL, looked up by item id: what `orca-replay` answers.

Harness-free: lm-eval's and lmms-eval's `orca-replay` models differ only in how they find a
request's doc; the model arguments they accept and the lookup are this one class.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from orca_judge.data import load_items

# What the harnesses' CLIs pass every model (ignored: nothing is computed).
HARNESS_ARGS = frozenset({"batch_size", "max_batch_size", "device"})


class SavedCandidates:
    """`--model_args path=ITEMS.jsonl`: each item's candidate answer, by its id."""

    def __init__(self, path: str | None, model_args: Mapping[str, object]) -> None:
        unknown = sorted(set(model_args) - HARNESS_ARGS)
        if unknown:
            raise ValueError(f"orca-replay: unknown model_args {', '.join(unknown)}")
        if not path:
            raise ValueError("orca-replay needs the answers: --model_args path=ITEMS.jsonl")
        self.path = str(path)
        self.by_id = {item.id: item.candidate for item in load_items(self.path)}

    def answers(self, ids: Sequence[str]) -> list[str]:
        """The saved candidate of every id; fails naming the ids without one."""
        missing = [i for i in ids if i not in self.by_id]
        if missing:
            raise ValueError(
                f"orca-replay: {len(missing)} docs have no candidate in {self.path} "
                f"(e.g. {', '.join(missing[:5])}); answers are matched by the doc's 'id'"
            )
        return [self.by_id[i] for i in ids]


def doc_id_of(doc: object) -> str:
    """The item id a doc carries ('' when it is not a mapping)."""
    return str(doc.get("id")) if isinstance(doc, Mapping) else ""
