"""Multi-stage curricula: stages trained in order, each continuing from the previous one's best.

Each stage is a full `train` run with its own data, configuration, training arguments and run
folder; only the weights carry over (the optimiser starts fresh).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from orca_judge.config import OrcaConfig
from orca_judge.data import OrcaItem
from orca_judge.processes import Processes
from orca_judge.training.arguments import TrainingArguments
from orca_judge.training.loop import TrainResult, train


@dataclass
class Stage:
    """One curriculum stage: its data, the judge's configuration and how to train it."""

    name: str
    config: OrcaConfig
    train_items: Sequence[OrcaItem]
    dev_items: Sequence[OrcaItem]
    provenance: dict[str, Any] = field(default_factory=dict)
    training: TrainingArguments = field(default_factory=TrainingArguments)


def train_curriculum(
    stages: Sequence[Stage],
    output: str | Path,
    *,
    run_dir: str | Path | None = None,
    overwrite: bool = False,
    device: str | None = None,
    progress: bool = True,
    keep_evaluations: int = 0,
    processes: Processes | None = None,
) -> list[TrainResult]:
    """Run stages in order, each from the previous stage's best checkpoint with a fresh optimiser.

    The last stage writes `output`, earlier ones `<output>-stages/<name>`. Run state goes to
    `run_dir` (one stage) or `run_dir/<name>` (several); default `<checkpoint>-run`.
    `processes`: as for `train`.
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
                training=stage.training,
                run_dir=stage_run,
                init_from=previous,
                device=device,
                progress=progress,
                overwrite=overwrite,
                provenance=stage.provenance,
                keep_evaluations=keep_evaluations,
                processes=processes,
            )
        )
        previous = target
    return results


@dataclass
class Curriculum:
    """Loaded stages, ready to train, and the held-out items kept for the final report."""

    stages: list[Stage]
    heldout: list[OrcaItem] = field(default_factory=list)
    heldout_source: str | None = None  # the dev file the held-out items were taken from


def run_curriculum(
    curriculum: Curriculum,
    output: str | Path,
    *,
    run_dir: str | Path | None = None,
    overwrite: bool = False,
    device: str | None = None,
    progress: bool = True,
    keep_evaluations: int = 0,
    processes: Processes | None = None,
) -> dict[str, Any]:
    """Train every stage, record the curriculum and score the held-out items: what orca train does.

    Returns the summary `orca train --json` prints: the checkpoint, each stage's metrics and,
    with held-out items, their agreement with the human ratings (also stored in metrics.json).
    `processes`: as for `train`; the held-out items are scored by all of them, rank 0 writes.
    """
    from orca_judge.checkpoint import update_metrics
    from orca_judge.judge import OrcaJudge
    from orca_judge.report import agreement_report

    stages, heldout = curriculum.stages, curriculum.heldout
    processes = processes or Processes.current()
    results = train_curriculum(
        stages,
        output,
        run_dir=run_dir,
        overwrite=overwrite,
        device=device,
        progress=progress,
        keep_evaluations=keep_evaluations,
        processes=processes,
    )
    summary: dict[str, Any] = {
        "checkpoint": str(output),
        "stages": [{"name": s.name, **r.metrics} for s, r in zip(stages, results, strict=True)],
    }
    if len(stages) > 1:
        # the final checkpoint names the data of every stage it descends from
        keys = ("name", "data", "train_items", "dev_items", "best_step")
        curriculum_record = [{k: stage[k] for k in keys} for stage in summary["stages"]]
        processes.on_main(lambda: update_metrics(output, {"curriculum": curriculum_record}))
    if heldout:
        judge = OrcaJudge.from_pretrained(output, device=processes.device(device))
        preds = judge.score(heldout, progress=progress, processes=processes)
        summary["heldout"] = {
            "source": curriculum.heldout_source,
            "items": len(heldout),
            "questions": stages[-1].provenance["heldout_questions"],
            "ids": [it.id for it in heldout],
            **agreement_report(preds, heldout),
        }
        processes.on_main(lambda: update_metrics(output, {"heldout": summary["heldout"]}))
    return summary
