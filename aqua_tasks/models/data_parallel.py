"""Data parallelism for local models under `accelerate launch`, the way lm-eval's HF model does it.

Each process loads the whole model on its own device; lm-eval gives each rank every
`world_size`-th request and gathers the per-item results on rank 0. This module only starts
the process group and offers the collective calls lm-eval's evaluator makes on a model.
"""

from __future__ import annotations

import os
from datetime import timedelta
from typing import Any

from aqua_tasks.errors import ModelArgumentError


def launched_processes() -> int:
    """How many processes the launcher started (1 when run directly)."""
    try:
        return max(1, int(os.environ.get("WORLD_SIZE", "1")))
    except ValueError:
        return 1


def parse_max_memory(value: str | None) -> dict[int | str, str] | None:
    """`0:20GiB;1:20GiB;cpu:64GiB` as accelerate's max_memory mapping (None stays None);
    ModelArgumentError naming the value otherwise."""
    if value is None or str(value).strip() == "":
        return None
    limits: dict[int | str, str] = {}
    for part in str(value).split(";"):
        device, sep, amount = part.partition(":")
        device, amount = device.strip(), amount.strip()
        if not sep or not device or not amount:
            raise ModelArgumentError(
                f"max_memory={value!r}: expected DEVICE:AMOUNT pairs joined by ';', e.g. "
                "0:20GiB;1:20GiB;cpu:64GiB (commas separate model_args)"
            )
        key: int | str = int(device) if device.isdigit() else device
        if key in limits:
            raise ModelArgumentError(f"max_memory={value!r}: device {device} given twice")
        limits[key] = amount
    return limits


class Collective:
    """Rank, world size and the gather/barrier calls of one data-parallel process group."""

    def __init__(self) -> None:
        from accelerate import Accelerator
        from accelerate.utils import InitProcessGroupKwargs

        # Ranks wait for each other at the end of generation; a slow rank must not time out.
        self.accelerator = Accelerator(
            kwargs_handlers=[InitProcessGroupKwargs(timeout=timedelta(weeks=52))]
        )
        self.rank = int(self.accelerator.process_index)
        self.world_size = int(self.accelerator.num_processes)
        self.device = self.accelerator.device

    def all_gather(self, tensor: Any) -> Any:
        """The tensors of all ranks, concatenated."""
        return self.accelerator.gather(tensor)

    def gather_object(self, obj: Any, dst: int = 0) -> list[Any] | None:
        """Every rank's object on rank `dst` (None elsewhere)."""
        import torch.distributed as dist

        result = [None] * self.world_size if self.rank == dst else None
        dist.gather_object(obj=obj, object_gather_list=result, dst=dst)
        return result

    def all_objects(self, obj: Any) -> list[Any]:
        """Every rank's object, on every rank."""
        import torch.distributed as dist

        result: list[Any] = [None] * self.world_size
        dist.all_gather_object(result, obj)
        return result

    def barrier(self) -> None:
        """Wait until every rank gets here."""
        self.accelerator.wait_for_everyone()
