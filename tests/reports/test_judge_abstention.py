"""aqua open-judge-check: a judge's verdicts on abstentions and class names, measured."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from open_fixtures import open_judge_checkpoint
from shared_data import shared_data

from aqua_tasks.cli.open_judge_check import main
from aqua_tasks.core.open_ended import JudgeRule
from aqua_tasks.reports.judge_abstention import (
    HAND_ABSTENTIONS,
    AbstentionCheck,
    PairShare,
    check_items,
    check_markdown,
    pair_shares,
    wording_shares,
)
from aqua_tasks.task.open_ended import build_open_docs

pytestmark = pytest.mark.shared_data


def test_each_open_doc_gives_its_pairs(released_dir):
    docs, _ = build_open_docs("animal", data_dir=str(released_dir), settings={"audio": False})
    items = check_items(docs[:8])
    pairs = [item["pair"] for item in items]
    assert pairs.count(("class", "the clip's class")) == 4
    assert pairs.count(("abstention", "a class name")) == 4
    assert pairs.count(("class", "an abstention")) == pairs.count(("abstention", "an abstention"))
    solvable = next(i for i in items if i["pair"] == ("class", "the clip's class"))
    assert solvable["candidate"] == solvable["reference"] == docs[0]["reference"]
    assert all(i["candidate"] in HAND_ABSTENTIONS for i in items if i["pair"][1] == "an abstention")


def test_shares_and_the_verdict_follow_the_ratings():
    items = [{"pair": ("class", "the clip's class")}, {"pair": ("class", "an abstention")}]
    items += [{"pair": ("abstention", "an abstention")}, {"pair": ("abstention", "a class name")}]
    shares = pair_shares(items, [1.0, 0.0, 0.8, 0.1], JudgeRule(4.0))
    assert [s.judged_right for s in shares] == [1.0, 0.0, 1.0, 0.0]
    check = AbstentionCheck("ckpt", "rule", shares, None)
    assert check.worst_error == 0 and check.verdict().startswith("fit for open-ended AQUA")
    bad = AbstentionCheck(
        "ckpt", "rule", (*shares[:1], PairShare("class", "an abstention", False, 4, 0.5, 3.0)), None
    )
    assert bad.worst_error == 0.5 and "NOT fit" in bad.verdict()


def test_each_wording_is_counted_against_both_references():
    dont_know, unknown = HAND_ABSTENTIONS[5], HAND_ABSTENTIONS[2]
    items = [
        {"pair": ("abstention", "an abstention"), "candidate": dont_know},
        {"pair": ("abstention", "an abstention"), "candidate": dont_know},
        {"pair": ("abstention", "an abstention"), "candidate": unknown},
        {"pair": ("class", "an abstention"), "candidate": dont_know},
        {"pair": ("abstention", "a class name"), "candidate": "a dog"},
    ]
    # A judge that learned the words: "I don't know." wrong whatever the reference says.
    shares = wording_shares(items, [0.0, 0.5, 1.0, 0.0, 0.0], JudgeRule(4.0))
    assert [(w.wording, w.n_abstention, w.right_abstention, w.n_class) for w in shares] == [
        (unknown, 1, 1.0, 0),
        (dont_know, 2, 0.0, 1),
    ]
    assert shares[1].right_class == 0.0
    pairs = pair_shares(items, [0.0, 0.5, 1.0, 0.0, 0.0], JudgeRule(4.0))
    table = check_markdown(AbstentionCheck("ckpt", "rule", pairs, None, shares))
    assert f"| {dont_know} | 0.0% (2) | 0.0% (1) |" in table
    assert f"| {unknown} | 100.0% (1) | — |" in table


def test_the_command_measures_a_checkpoint_and_says_whether_it_is_fit(released_dir, capsys):
    judge = open_judge_checkpoint(released_dir)
    human = shared_data("orca-human") / "dev.jsonl"
    status = main(
        [
            *("--checkpoint", str(judge), "--backbone", str(judge.parent / "backbone")),
            *("--data-dir", str(released_dir), "--track", "animal", "--limit", "12"),
            *("--human-items", str(human), "--json"),
        ]
    )
    payload = json.loads(capsys.readouterr().out)
    assert [p["n"] for p in payload["pairs"]] == [6, 6, 6, 6]
    assert status == (0 if payload["fit"] else 1)
    assert payload["verdict"].startswith("fit" if payload["fit"] else "NOT fit")
    worst = max(
        (1 - p["judged_right"]) if p["fit_judge_says_right"] else p["judged_right"]
        for p in payload["pairs"]
    )
    assert payload["fit"] == (worst <= 0.1)
    wordings = payload["wordings"]
    assert sum(w["n_abstention"] for w in wordings) == 6
    assert sum(w["n_class"] for w in wordings) == 6
    assert {w["wording"] for w in wordings} <= set(HAND_ABSTENTIONS)
    assert payload["human"]["n"] > 0 and 0 <= payload["human"]["agreement"] <= 1
    assert payload["rule"] == "expected judge rating >= 4"


def test_an_ensemble_folder_is_checked_as_the_mixture_of_its_members(
    released_dir, capsys, tmp_path
):
    import torch

    from orca_judge import OrcaJudge
    from orca_judge.checkpoint.ensemble import write_ensemble

    judge = open_judge_checkpoint(released_dir)
    backbone = str(judge.parent / "backbone")
    nudged = OrcaJudge.from_pretrained(judge, backbone=backbone)
    with torch.no_grad():
        nudged.model.head.bias[4] += 2.0  # towards rating 5: credits more
    other = nudged.save_pretrained(tmp_path / "nudged")
    write_ensemble([judge, other], tmp_path / "ensemble", backbone=backbone)
    means = []
    for checkpoint in (judge, other, tmp_path / "ensemble"):
        main(
            [
                *("--checkpoint", str(checkpoint), "--backbone", backbone),
                *("--data-dir", str(released_dir), "--track", "animal", "--limit", "12", "--json"),
            ]
        )
        means.append([p["mean_rating"] for p in json.loads(capsys.readouterr().out)["pairs"]])
    mine, theirs, mixed = means
    assert mixed == pytest.approx([(a + b) / 2 for a, b in zip(mine, theirs, strict=True)])
    assert mine != pytest.approx(theirs, abs=0.05)


def test_a_bad_limit_is_one_line(released_dir):
    done = subprocess.run(
        [
            str(Path(sys.executable).parent / "aqua"),
            "open-judge-check",
            "--checkpoint",
            "x",
            "--data-dir",
            str(released_dir),
            "--limit",
            "0",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "aqua open-judge-check: error: --limit: expected a finite number with 1 <= --limit, got 0"
    ]
