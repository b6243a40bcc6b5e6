"""Ablation tasks, CoT, conditioning on another run, manifests, intervals and breakdowns."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from lm_eval.tasks import TaskManager

from aqua_tasks.cli.score import main as aqua_score
from aqua_tasks.core.data import REJECTION_STRINGS, TRACK_FILE_STEMS, load_json_file
from aqua_tasks.core.intervals import bootstrap_ca_interval, metric_intervals, wilson_interval
from aqua_tasks.core.manifest import DOC_FIELDS, MANIFEST_FIELDS, sha256_file
from aqua_tasks.core.prompts import COT_INSTRUCTION
from aqua_tasks.core.scoring import summarize
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir

VARIANT_TASKS = {
    "aqua-design1": "option_design1",
    "aqua-design2": "option_design2",
    "aqua-hint": "uncertainty",
    "aqua-cot": "main",
}


@pytest.fixture(scope="module")
def manager(released_dir) -> TaskManager:
    return TaskManager(
        include_path=str(task_config_dir()),
        include_defaults=False,
        metadata={"data_dir": str(released_dir), "audio": False},
    )


def test_main_glob_selects_only_the_three_released_tracks(manager):
    assert manager.match_tasks(["aqua_*"]) == ["aqua_animal", "aqua_music", "aqua_vocal"]
    ablations = manager.match_tasks(["aqua-*"])
    # 12 multiple-choice ablations and the 3 open-ended tasks of the released tracks.
    assert len(ablations) == 15 and not set(ablations) & {"aqua_animal", "aqua"}
    assert {"aqua-open_animal", "aqua-open_music", "aqua-open_vocal"} <= set(ablations)


@pytest.mark.parametrize("prefix", sorted(VARIANT_TASKS))
def test_variant_tasks_hold_all_items_with_their_designs_rejection_strings(
    manager, released_dir, prefix
):
    variant = VARIANT_TASKS[prefix]
    tasks = manager.load([f"{prefix}_music"])["tasks"]
    task = tasks[f"{prefix}_music"]
    docs = list(task.test_docs())
    assert len(docs) == 1440
    absent, unanswerable = REJECTION_STRINGS[variant]
    assert {d["options"][-1] for d in docs if d["type"] in ("AAD", "IASD")} == {absent}
    assert {d["options"][-1] for d in docs if d["type"] == "IAQD"} == {unanswerable}
    prompt = task.doc_to_text(docs[1])
    assert prompt.startswith("<audio>\n") and docs[1]["question"] in prompt
    assert (COT_INSTRUCTION in prompt) == (prefix == "aqua-cot")
    manifest = task.config.metadata["aqua_manifest"]
    assert set(manifest) == set(MANIFEST_FIELDS)
    data_file = released_dir / manifest["data_file"]
    assert manifest["data_sha256"] == sha256_file(data_file) and manifest["variant"] == variant
    assert manifest["prompt_style"] == ("cot" if prefix == "aqua-cot" else "plain")
    # Each doc keeps the manifest fields scoring reads per item; the rest are recorded once.
    for doc in docs:
        assert {k: doc[k] for k in DOC_FIELDS} == {k: manifest[k] for k in DOC_FIELDS}
        assert not set(doc) & (set(MANIFEST_FIELDS) - set(DOC_FIELDS))


def test_manifest_is_stable_across_builds(manager, released_dir):
    first = manager.load(["aqua-cot_vocal"])["tasks"]["aqua-cot_vocal"].config.metadata
    again = (
        TaskManager(
            include_path=str(task_config_dir()),
            include_defaults=False,
            metadata={"data_dir": str(released_dir), "audio": False},
        )
        .load(["aqua-cot_vocal"])["tasks"]["aqua-cot_vocal"]
        .config.metadata
    )
    assert first["aqua_manifest"] == again["aqua_manifest"]


def test_wilson_interval_matches_the_closed_form():
    z2 = 1.959963984540054**2
    assert wilson_interval(0, 10) == pytest.approx((0.0, z2 / (10 + z2)))
    assert wilson_interval(5, 10) == pytest.approx((0.23659, 0.76341), abs=1e-5)
    assert all(math.isnan(v) for v in wilson_interval(0, 0))


def test_ca_bootstrap_is_seeded_and_brackets_the_estimate():
    rng = np.random.default_rng(1)
    solvable = rng.random(300) < 0.8
    variant = rng.random(300) < 0.4
    first = bootstrap_ca_interval(solvable, variant, seed=3)
    assert first == bootstrap_ca_interval(solvable, variant, seed=3)
    estimate = (solvable & variant).sum() / solvable.sum()
    assert first[0] < estimate < first[1] and first[1] - first[0] < 0.2
    assert first != bootstrap_ca_interval(solvable, variant, seed=4)


def test_conditioning_uses_the_other_runs_solvable_answers():
    rows = [
        {"clip": c, "type": t, "correct": ok, "parsed": True, "excluded": False}
        for c, t, ok in [
            ("c1", "Solvable", True),
            ("c1", "AAD", True),
            ("c2", "Solvable", True),
            ("c2", "AAD", False),
            ("c3", "Solvable", False),
            ("c3", "AAD", True),
        ]
    ]
    other = {"c1": False, "c2": True, "c3": True}
    own = summarize(rows)
    conditioned = summarize(rows, other)
    assert own["ca_aad"] == 0.5 and own["n_ca_aad"] == 2
    assert conditioned["ca_aad"] == 0.5 and conditioned["n_ca_aad"] == 2  # c2 wrong, c3 right
    assert conditioned["acc"] == own["acc"] == pytest.approx(2 / 3)
    assert metric_intervals(rows, condition=other)["ca_aad"][0] <= 0.5


def _authors_results(released_dir, tmp_path, name, solvable_right, aad_right):
    stem = TRACK_FILE_STEMS["animal"]
    entries = load_json_file(released_dir / f"{stem}.json")
    for n, entry in enumerate(entries):
        clip = n // 4
        right = {"Solvable": solvable_right(clip), "AAD": aad_right(clip)}.get(entry["type"], True)
        index = (
            entry["options"].index(entry["answer"])
            if right
            else next(k for k, o in enumerate(entry["options"]) if o != entry["answer"])
        )
        entry["response"] = f"({chr(ord('a') + index)})"
    folder = tmp_path / name
    folder.mkdir()
    (folder / f"{stem}.json").write_text(json.dumps(entries))
    return folder


def test_condition_on_another_run_reproduces_hand_computed_ca(released_dir, tmp_path, capsys):
    plain = _authors_results(released_dir, tmp_path, "plain", lambda k: k % 3 != 0, lambda k: True)
    cot = _authors_results(released_dir, tmp_path, "cot", lambda k: True, lambda k: k % 3 == 0)
    assert aqua_score([str(cot), "--json"]) == 0
    own = json.loads(capsys.readouterr().out)["results"]["aqua_animal"]
    assert own["ca_aad"] == pytest.approx(120 / 360)  # own Solvable all right
    assert aqua_score([str(cot), "--condition-on", str(plain), "--json"]) == 0
    payload = json.loads(capsys.readouterr().out)
    conditioned = payload["results"]["aqua_animal"]
    # The plain run got clips with k % 3 != 0 right; CoT's AAD is right only for k % 3 == 0.
    assert conditioned["ca_aad"] == 0.0 and conditioned["n_ca_aad"] == 240
    assert conditioned["ca_iasd"] == 1.0 and payload["conditioned_on"] == str(plain)
    low, high = payload["intervals"]["aqua_animal"]["acc"]
    assert low < 1.0 <= high + 1e-12


def test_breakdown_by_subtype_and_class_counts_every_item(released_dir, tmp_path, capsys):
    run = _authors_results(released_dir, tmp_path, "run", lambda k: True, lambda k: False)
    assert aqua_score([str(run), "--breakdown", "class", "--json"]) == 0
    cells = json.loads(capsys.readouterr().out)["breakdown"]["aqua_animal"]
    assert sum(c["n"] for c in cells) == 1440
    dog_solvable = next(c for c in cells if c["type"] == "Solvable" and c["class"] == "Dog")
    assert dog_solvable["n"] == 40 and dog_solvable["acc"] == 1.0
    assert all(c["acc"] == 0.0 for c in cells if c["type"] == "AAD")
    assert aqua_score([str(run), "--breakdown", "subtype"]) == 0
    assert "| IAQD | place |" in capsys.readouterr().out
