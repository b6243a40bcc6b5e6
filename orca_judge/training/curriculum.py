"""Multi-stage curricula: stages trained in order, each continuing from the previous one's best.

Each stage is a full `train` run with its own data, configuration and run folder; only the
weights carry over (the optimiser starts fresh).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orca_judge.config import OrcaConfig
from orca_judge.data import OrcaItem
from orca_judge.training.loop import TrainResult, train


@dataclass
class Stage:
    """One curriculum stage: its data and its full configuration."""

    name: str
    config: OrcaConfig
    train_items: Sequence[OrcaItem]
    dev_items: Sequence[OrcaItem]
    provenance: dict[str, Any] = field(default_factory=dict)


def train_curriculum(
    stages: Sequence[Stage],
    output: str | Path,
    *,
    run_dir: str | Path | None = None,
    overwrite: bool = False,
    device: str | None = None,
    progress: bool = True,
    keep_evaluations: int = 0,
) -> list[TrainResult]:
    """Run stages in order, each from the previous stage's best checkpoint with a fresh optimiser.

    The last stage writes `output`, earlier ones `<output>-stages/<name>`. Run state goes to
    `run_dir` (one stage) or `run_dir/<name>` (several); default `<checkpoint>-run`.
    """
    output = Path(output)
    results: list[TrainResult] = []
    previous: Path | None = None
    for i, stage in enumerate(stages):
        last = i == len(stages) - 1
        target = output if last else output.with_name(output.name + "-stages") / stage.name
        stage_run = None
        if run_dir is not None:
            stage_run = Path(run_dir) / stage.name if len(stages) > 1 else Path(run_dir)
        results.append(
            train(
                stage.config,
                stage.train_items,
                stage.dev_items,
                target,
                run_dir=stage_run,
                init_from=previous,
                device=device,
                progress=progress,
                overwrite=overwrite,
                provenance=stage.provenance,
                keep_evaluations=keep_evaluations,
            )
        )
        previous = target
    return results
