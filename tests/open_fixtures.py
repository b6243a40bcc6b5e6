"""A tiny judge trained offline on open-ended AQUA's own judge inputs, for the open-task tests.

Its training items are what `metric: orca` hands the judge in an `aqua-open_<track>` run
(question, reference, rationale from the released files), each with three candidates: the
reference itself and, on IAQD items, an abstention in other words (rated 5); another class
name, or on IAQD items a class name (rated 1). A 2-layer random Llama learns this well enough
that the always-abstaining and the first-class baselines are judged as a human would.
"""

from __future__ import annotations

import random
import shutil
from pathlib import Path

from shared_cache import shared_artefact

ABSTENTIONS = (
    "It cannot be determined from the audio.",
    "I can't tell from the recording.",
    "That is not possible to say from this sound.",
)


def open_judge_items(data_dir: Path, tracks: tuple[str, ...], seed: int) -> list[dict]:
    """Rated candidates for every open item of the tracks, as the open tasks' docs give them."""
    from aqua_tasks.task.open_ended import build_open_docs

    rng = random.Random(seed)
    items = []
    for track in tracks:
        docs, _ = build_open_docs(track, data_dir=str(data_dir), settings={"audio": False})
        for doc in docs:
            classes = list(doc["classes"]) or ["Dog"]
            base = {k: doc[k] for k in ("question", "reference", "rationale")} | {"transcript": ""}
            wrong_class = rng.choice([c for c in classes if c != doc["reference"]] or classes)
            right = [doc["reference"]]
            if doc["reference_kind"] == "abstention":
                right.append(rng.choice(ABSTENTIONS))
            else:
                right.append(f"It is {doc['reference'].lower()}.")
            wrong = [
                wrong_class,
                rng.choice(ABSTENTIONS) if doc["type"] == "Solvable" else rng.choice(classes),
            ]
            for n, (candidate, rating) in enumerate(
                [(c, 5) for c in right] + [(c, 1) for c in wrong]
            ):
                items.append(
                    base
                    | {
                        "id": f"{track}-{doc['id']}-{n}",
                        "candidate": candidate,
                        "ratings": [rating] * 3,
                    }
                )
    rng.shuffle(items)
    return items


def open_judge_checkpoint(data_dir: Path) -> Path:
    """The tiny open-ended judge (built once per test run), its backbone beside it."""
    return shared_artefact("orca-open", lambda out: _train(out, data_dir)) / "judge"


def _train(out: Path, data_dir: Path) -> None:
    from orca_fixtures import tiny_config, tiny_llama_dir, tiny_training

    from orca_judge.data import load_items
    from orca_judge.training.loop import train

    shutil.copytree(tiny_llama_dir(), out / "backbone")
    items = open_judge_items(data_dir, ("animal", "music", "vocal"), seed=0)
    dev = items[:128]
    train(
        tiny_config(backbone=str(out / "backbone")),
        load_items(items[128:]),
        load_items(dev),
        out / "judge",
        # 150 steps tell abstentions from class names as well as 400 did (0 of 120 wrong on
        # the baselines' replies), in a third of the time.
        training=tiny_training(max_steps=150, eval_every=50, batch_size=16, lr=3e-3),
        progress=False,
    )
