"""The processes a launcher started (`torchrun`, `accelerate launch`) and the calls they share.

A launcher starts one Python process per rank and tells each its place through environment
variables (`RANK`, `WORLD_SIZE`, `LOCAL_RANK`, `MASTER_ADDR`, `MASTER_PORT`). Training and
scoring read them here, join one `torch.distributed` process group (gloo on CPU, NCCL on
CUDA) and use the few collective calls below. Rank 0 ("main") is the only one that writes
files; `on_main` runs a step there and hands its result, or its error, to every rank, so no
rank is left waiting in a collective call for one that failed.

Run directly (no launcher, or `WORLD_SIZE=1`), everything here is a no-op on one process.
torch is imported only when a call needs it: the training arguments (and `--help`) read
`RECORD_FIELDS` without it.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, TypeVar

if TYPE_CHECKING:
    import torch

T = TypeVar("T")

# What a checkpoint's training record adds about the processes that trained it. They say how
# the run computed, not what: a judge's identity and the comparison of two checkpoints
# leave them out.
RECORD_FIELDS = ("world_size", "per_process_batch")

# Ranks wait for each other while rank 0 evaluates on dev or writes a checkpoint.
_TIMEOUT = timedelta(hours=2)


def _env_int(env: Mapping[str, str], name: str, default: int) -> int:
    text = env.get(name, "")
    if text.strip() == "":
        return default
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"environment variable {name}={text!r}: expected a whole number") from None


@dataclass(frozen=True)
class Processes:
    """This process's rank among `world_size` processes (one process: rank 0 of 1)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @classmethod
    def from_environment(cls, env: Mapping[str, str] | None = None) -> Processes:
        """The rank, world size and local rank a launcher set (one process when none did)."""
        env = os.environ if env is None else env
        world_size = _env_int(env, "WORLD_SIZE", 1)
        rank = _env_int(env, "RANK", 0)
        local_rank = _env_int(env, "LOCAL_RANK", rank)
        if world_size < 1 or not 0 <= rank < world_size:
            raise ValueError(
                f"environment: RANK={rank} WORLD_SIZE={world_size}: expected 0 <= RANK < "
                "WORLD_SIZE (start several processes with torchrun or accelerate launch)"
            )
        return cls(rank, world_size, local_rank)

    @classmethod
    def current(cls) -> Processes:
        """The process group already joined, else one process."""
        import torch.distributed as dist

        if dist.is_available() and dist.is_initialized():
            return cls(
                dist.get_rank(), dist.get_world_size(), _env_int(os.environ, "LOCAL_RANK", 0)
            )
        return cls()

    @property
    def is_main(self) -> bool:
        """Whether this is rank 0, the one process that writes files and prints results."""
        return self.rank == 0

    @property
    def distributed(self) -> bool:
        return self.world_size > 1

    def device(self, name: str | torch.device | None = None) -> torch.device:
        """This rank's device: `name` resolved as usual; under a launcher, each rank's own GPU."""
        import torch

        from eval_common.devices import resolve_device

        if self.distributed and _env_flag("ACCELERATE_USE_CPU"):
            return torch.device("cpu")  # `accelerate launch --cpu`
        device = resolve_device(name)
        if self.distributed and device.type == "cuda":
            return torch.device("cuda", self.local_rank)
        return device

    def per_process(self, batch_size: int, flag: str = "--batch-size") -> int:
        """Items of each batch one process takes; ValueError unless the batch splits evenly."""
        if batch_size < self.world_size or batch_size % self.world_size:
            raise ValueError(
                f"{flag} {batch_size} cannot be split over {self.world_size} processes: give a "
                f"multiple of {self.world_size} (each process takes batch size / processes items "
                "of every batch)"
            )
        return batch_size // self.world_size

    def record(self, batch_size: int) -> dict[str, int]:
        """What a checkpoint's training record says about these processes (RECORD_FIELDS)."""
        return {"world_size": self.world_size, "per_process_batch": self.per_process(batch_size)}

    def share(self, items: Sequence[T]) -> list[T]:
        """This rank's share of `items`: every world_size-th one, starting at its rank."""
        return list(items[self.rank :: self.world_size])

    def sum_all(self, tensor: torch.Tensor) -> torch.Tensor:
        """The element-wise sum of `tensor` over every rank, in place (one process: itself)."""
        if self.distributed:
            import torch.distributed as dist

            dist.all_reduce(tensor, op=dist.ReduceOp.SUM)
        return tensor

    def gather(self, value: Any) -> list[Any]:
        """Every rank's `value` (picklable), in rank order, on every rank."""
        if not self.distributed:
            return [value]
        import torch.distributed as dist

        gathered: list[Any] = [None] * self.world_size
        dist.all_gather_object(gathered, value)
        return gathered

    def broadcast_from_main(self, value: Any) -> Any:
        """Rank 0's `value` (picklable), on every rank."""
        if not self.distributed:
            return value
        import torch.distributed as dist

        box = [value if self.is_main else None]
        dist.broadcast_object_list(box, src=0)
        return box[0]

    def on_main(self, step: Callable[[], T]) -> T:
        """Run `step` on rank 0 only; every rank returns its result or raises its error.

        The others wait meanwhile, so what rank 0 writes is complete when they go on.
        """
        outcome: tuple[bool, Any] = (True, None)
        if self.is_main:
            try:
                outcome = (True, step())
            except Exception as err:
                if not self.distributed:
                    raise
                outcome = (False, err)
        ok, value = self.broadcast_from_main(outcome)
        if not ok:
            raise value
        return value

    def same_weights(self, parameters: Sequence[torch.nn.Parameter]) -> None:
        """Give every rank rank 0's values of `parameters`, so all replicas start equal."""
        if not self.distributed:
            return
        import torch
        import torch.distributed as dist

        with torch.no_grad():
            flat = torch.cat([p.detach().reshape(-1) for p in parameters])
            dist.broadcast(flat, src=0)
            _unflatten_into(flat, [p.data for p in parameters])

    def sum_gradients(self, parameters: Sequence[torch.nn.Parameter], extra: torch.Tensor) -> None:
        """Sum the gradients of `parameters`, and the values of `extra`, over every rank in place.

        The gradients go in one collective call (the bucket a DDP wrapper would use), in
        their own dtype; a parameter without a gradient on this rank (an empty share) counts
        as zero. `extra` (the step's loss and flags, any dtype) goes in a second, small one.
        """
        if not self.distributed:
            return
        import torch

        grads = [
            p.grad
            if p.grad is not None
            else torch.zeros_like(p, memory_format=torch.contiguous_format)
            for p in parameters
        ]
        flat = self.sum_all(torch.cat([g.reshape(-1) for g in grads]))
        for p, g in zip(parameters, grads, strict=True):
            p.grad = g
        _unflatten_into(flat, grads)
        # NCCL reduces only tensors on the ranks' GPUs.
        extra.copy_(self.sum_all(extra.to(flat.device)))


def _unflatten_into(flat: torch.Tensor, targets: Sequence[torch.Tensor]) -> None:
    offset = 0
    for target in targets:
        n = target.numel()
        target.copy_(flat[offset : offset + n].view_as(target))
        offset += n


def _env_flag(name: str) -> bool:
    return os.environ.get(name, "").strip().lower() in ("1", "true", "yes")


@contextmanager
def launched_group(device: str | torch.device | None = None) -> Iterator[Processes]:
    """Join the launcher's process group for the calls inside (gloo on CPU, NCCL on CUDA).

    Without a launcher this yields one process and starts nothing. A group that was already
    joined is used as it is and left open.
    """
    import torch
    import torch.distributed as dist

    processes = Processes.from_environment()
    if not processes.distributed or dist.is_initialized():
        yield processes if not processes.distributed else Processes.current()
        return
    rank_device = processes.device(device)
    if rank_device.type == "cuda":
        torch.cuda.set_device(rank_device)  # NCCL's object calls use the current device
    backend = "nccl" if rank_device.type == "cuda" else "gloo"
    for name in ("MASTER_ADDR", "MASTER_PORT"):
        if not os.environ.get(name):
            raise ValueError(
                f"environment: WORLD_SIZE={processes.world_size} but {name} is not set; start "
                "the processes with torchrun or accelerate launch"
            )
    dist.init_process_group(
        backend,
        rank=processes.rank,
        world_size=processes.world_size,
        timeout=_TIMEOUT,
        **({"device_id": rank_device} if backend == "nccl" else {}),
    )
    try:
        yield processes
    finally:
        dist.destroy_process_group()
