"""The command prefix that starts an lm-eval run on two gloo processes on CPU, for tests."""

from __future__ import annotations

import os
import sys
from pathlib import Path

BIN = Path(sys.executable).parent
# What the launched processes need besides the prefix: gloo on CPU, one thread each.
CPU_ENV = {"ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}


def accelerate_two_processes(port_base: int) -> list[str]:
    """`accelerate launch` of 2 processes (a port of its own per test process)."""
    return [
        str(BIN / "accelerate"),
        "launch",
        "--multi_gpu",  # the multi-process launcher; ACCELERATE_USE_CPU makes it gloo on CPU
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(port_base + os.getpid() % 1000),
    ]
