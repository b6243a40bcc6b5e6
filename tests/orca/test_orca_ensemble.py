"""orca ensemble: several judges in one folder, loaded as one judge whose predictions are mixed."""

import json
import shutil

import pytest
import torch
from orca_fixtures import synthetic_items, tiny_trained_checkpoint, write_jsonl

from orca_judge import OrcaJudge, OrcaPrediction, load_judge
from orca_judge.checkpoint import update_config
from orca_judge.checkpoint.ensemble import (
    MANIFEST,
    OrcaEnsemble,
    mixture,
    reading_problem,
    write_ensemble,
)
from orca_judge.cli import ensemble as cli_ensemble
from orca_judge.cli import score as cli_score
from orca_judge.errors import CheckpointError

ITEMS = synthetic_items(12, 5, "e")
MEMBER = {"folder": "member-0", "fingerprint": "x", "files_sha256": "y"}


@pytest.fixture(scope="module")
def members(tmp_path_factory):
    """The tiny trained judge and two others: its head nudged towards ratings 2 and 5."""
    root = tmp_path_factory.mktemp("members")
    paths = [tiny_trained_checkpoint()]
    for i, rating in enumerate((2, 5), 1):
        judge = OrcaJudge.from_pretrained(paths[0])
        with torch.no_grad():
            judge.model.head.bias[rating - 1] += 2.0
        paths.append(judge.save_pretrained(root / f"judge-{i}"))
    return paths


@pytest.fixture(scope="module")
def ensemble(members, tmp_path_factory):
    out = tmp_path_factory.mktemp("ens") / "ensemble"
    write_ensemble(members, out)
    return out


def test_the_ensemble_scores_the_equal_mixture_of_its_members(members, ensemble):
    singles = [OrcaJudge.from_pretrained(p).score(ITEMS) for p in members]
    judge = load_judge(ensemble)
    assert isinstance(judge, OrcaEnsemble) and len(judge.members) == 3
    mixed = judge.score(ITEMS)
    assert [p.id for p in mixed] == [it["id"] for it in ITEMS]
    for i, prediction in enumerate(mixed):
        own = [s[i] for s in singles]
        mean = sum(p.expected_unit for p in own) / 3
        second = sum(p.variance_unit + p.expected_unit**2 for p in own) / 3
        assert prediction.expected_unit == pytest.approx(mean)
        assert prediction.expected == pytest.approx(1 + 4 * mean)
        # the members' disagreement adds to the predicted disagreement of annotators
        assert prediction.variance_unit == pytest.approx(second - mean**2)
        assert prediction.variance_unit >= min(p.variance_unit for p in own)
        probs = [sum(p.distribution["probs"][r] for p in own) / 3 for r in range(5)]
        assert prediction.distribution["probs"] == pytest.approx(probs)
        assert sum(prediction.distribution["probs"]) == pytest.approx(1.0)
        assert len(prediction.distribution["members"]) == 3
        assert prediction.clamped_unit == pytest.approx(sum(p.clamped_unit for p in own) / 3)
    # the members do differ, so the mixture is not any one of them
    assert any(abs(singles[0][i].expected_unit - mixed[i].expected_unit) > 0.05 for i in range(12))


def test_its_identity_is_its_members_in_any_order_and_describe_lists_their_clamps(
    members, ensemble, tmp_path
):
    judge = load_judge(ensemble)
    write_ensemble(list(reversed(members)), tmp_path / "reversed")
    assert load_judge(tmp_path / "reversed").fingerprint() == judge.fingerprint()
    write_ensemble(members[:2], tmp_path / "two")
    assert load_judge(tmp_path / "two").fingerprint() != judge.fingerprint()
    assert judge.fingerprint() not in {OrcaJudge.from_pretrained(p).fingerprint() for p in members}
    setup = judge.describe()
    assert setup["members"] == 3 and len(setup["clamp_threshold"]) == 3
    assert setup["inputs"] == OrcaJudge.from_pretrained(members[0]).describe()["inputs"]


def test_orca_ensemble_cli_writes_a_folder_that_orca_score_reads(members, tmp_path, capsys):
    out = tmp_path / "ens"
    code = cli_ensemble.main([*map(str, members[:2]), "--output", str(out), "--json"])
    written = json.loads(capsys.readouterr().out)
    assert code == 0 and [m["folder"] for m in written["members"]] == ["member-0", "member-1"]
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["format"] == "orca ensemble/1" and len(manifest["members"]) == 2
    assert all((out / m["folder"] / "orca_judge.json").is_file() for m in written["members"])
    items = write_jsonl(tmp_path / "items.jsonl", ITEMS)
    assert cli_score.main(["--checkpoint", str(out), "--input", str(items), "--json",
                           "--no-progress"]) == 0  # fmt: skip
    scored = json.loads(capsys.readouterr().out)
    assert scored["report"]["judge"]["members"] == 2 and scored["report"]["n"] == 12
    expected = load_judge(out).score(ITEMS)
    assert [p["expected"] for p in scored["predictions"]] == pytest.approx(
        [p.expected for p in expected]
    )


def test_a_member_changed_after_writing_is_refused_at_load(members, ensemble, tmp_path):
    copy = tmp_path / "ens"
    shutil.copytree(ensemble, copy)
    shutil.rmtree(copy / "member-1")
    shutil.copytree(members[2], copy / "member-1")
    with pytest.raises(CheckpointError, match=r"member-1: its files .* are not those recorded"):
        load_judge(copy)
    shutil.rmtree(copy / "member-1")
    with pytest.raises(CheckpointError, match="member 1 of the ensemble is missing"):
        load_judge(copy)
    shutil.copytree(ensemble / "member-1", copy / "member-1")
    load_judge(copy)  # restored: loads again
    update_config(copy / "member-0", clamp_threshold=0.5)  # an edit in place is a change too
    with pytest.raises(CheckpointError, match=r"member-0: its files .* are not those recorded"):
        load_judge(copy)


def test_load_settings_reach_every_member_and_are_no_change_to_the_members(ensemble):
    judge = load_judge(ensemble, clamp_threshold=0.0, use_question=False, max_tokens=24)
    for member in judge.members:
        setup = member.describe()
        assert setup["inputs"]["question"] is False and setup["token_limit"] == 24
        assert setup["clamp_threshold"] is None  # 0 given turns clamping off, for every member
        assert setup["clamp_reason"] == "given when loading (clamping off)"
    assert judge.describe()["inputs"]["question"] is False
    assert judge.fingerprint() != load_judge(ensemble).fingerprint()  # reads items otherwise


@pytest.mark.parametrize(
    "manifest, message",
    [
        ({"format": "orca ensemble/9", "members": []}, "format 'orca ensemble/9', expected"),
        ({"format": "orca ensemble/1", "members": [MEMBER]},
         "'members' must list at least 2 judges"),
        ({"format": "orca ensemble/1", "members": [{**MEMBER, "folder": "../judge"}] * 2},
         "folder '../judge' is not a plain name"),
        ({"format": "orca ensemble/1", "members": [{"folder": "member-0"}] * 2},
         r"members\[0\] needs 'folder', 'fingerprint', 'files_sha256' as strings"),
        ([1, 2], "format 'list', expected"),
        ({"format": "orca ensemble/1", "members": [MEMBER, {**MEMBER, "files_sha256": "z"}]},
         r"members\[1\] repeats members\[0\]; each judge counts once"),
    ],
)  # fmt: skip
def test_a_broken_manifest_is_refused_naming_the_file_and_field(
    ensemble, tmp_path, manifest, message
):
    copy = tmp_path / "ens"
    shutil.copytree(ensemble, copy)
    (copy / MANIFEST).write_text(json.dumps(manifest))
    with pytest.raises(CheckpointError, match=message):
        load_judge(copy)


def test_loading_an_ensemble_as_one_judge_says_how_to_load_it(ensemble):
    with pytest.raises(CheckpointError, match=r"an ensemble of judges .*member-N .*load_judge"):
        OrcaJudge.from_pretrained(ensemble)


def test_bad_member_lists_are_refused_before_anything_is_written(
    members, ensemble, tmp_path, capsys
):
    out = tmp_path / "out"
    cases = [
        ([members[0]], "an ensemble needs at least 2 judges, got 1"),
        ([members[0], members[1], members[0]], f"{members[0]} is the same judge as {members[0]}"),
        ([members[0], ensemble], f"{ensemble}: is an ensemble itself; name its member judges"),
        ([members[0], tmp_path / "nowhere"], "nowhere"),
    ]
    for given, message in cases:
        code = cli_ensemble.main([*map(str, given), "--output", str(out)])
        # one line of ours (the backbone's loading bars may come before it)
        said = [line for line in capsys.readouterr().err.splitlines() if "orca ensemble" in line]
        assert code == 2 and len(said) == 1 and message in said[0], said
        assert not out.exists()


def test_members_that_read_items_differently_are_refused(members, tmp_path):
    other = tmp_path / "no-rationale"
    shutil.copytree(members[1], other)
    update_config(other, use_rationale=False)
    with pytest.raises(ValueError, match=r"no-rationale has input blocks .* combine judges of one"):
        write_ensemble([members[0], other], tmp_path / "out")
    assert not (tmp_path / "out").exists()


def test_an_existing_folder_is_replaced_only_with_overwrite_and_foreign_files_stay(
    members, tmp_path, capsys
):
    out = tmp_path / "ens"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    assert cli_ensemble.main([*map(str, members), "--output", str(out)]) == 2
    assert "pass --overwrite" in capsys.readouterr().err
    assert cli_ensemble.main([*map(str, members), "--output", str(out), "--overwrite"]) == 0
    (out / "member-notes.txt").write_text("mine too")  # named like a member, not listed as one
    assert (out / "member-2").is_dir()
    assert cli_ensemble.main([*map(str, members[:2]), "--output", str(out), "--overwrite"]) == 0
    assert (out / "notes.txt").read_text() == "mine"
    assert (out / "member-notes.txt").read_text() == "mine too"
    assert not (out / "member-2").exists()  # the old ensemble's third member went with it
    assert len(load_judge(out).members) == 2


def test_a_member_holding_a_link_is_refused_and_only_a_judges_own_files_are_copied(
    members, ensemble, tmp_path
):
    source = tmp_path / "judge"
    shutil.copytree(members[1], source)
    (source / "my-notes.txt").write_text("not the judge's")
    write_ensemble([members[0], source], tmp_path / "ens")
    assert not (tmp_path / "ens" / "member-1" / "my-notes.txt").exists()
    copy = tmp_path / "linked"
    shutil.copytree(ensemble, copy)
    (copy / "member-0" / "head.safetensors").unlink()
    (copy / "member-0" / "head.safetensors").symlink_to(members[0] / "head.safetensors")
    with pytest.raises(CheckpointError, match=r"head\.safetensors: a symbolic link"):
        load_judge(copy)


def test_a_hub_id_as_a_member_is_refused_in_one_line(members, tmp_path, capsys):
    code = cli_ensemble.main([str(members[0]), "org/judge", "--output", str(tmp_path / "o")])
    said = [line for line in capsys.readouterr().err.splitlines() if "orca ensemble" in line]
    assert code == 2 and len(said) == 1 and "org/judge: not a folder" in said[0]


def _prediction(item_id, mean, variance, distribution):
    return OrcaPrediction(item_id, 1 + 4 * mean, mean, None if variance is None else 16 * variance,
                          variance, distribution, mean, mean, 10, False)  # fmt: skip


def test_the_mixture_of_bernoulli_and_beta_judges():
    bernoulli = mixture([_prediction("a", 0.2, None, {"p": 0.2}),
                         _prediction("a", 0.6, None, {"p": 0.6})])  # fmt: skip
    assert bernoulli.distribution["p"] == pytest.approx(0.4) and bernoulli.variance is None
    beta = mixture([_prediction("a", 0.2, 0.01, {"alpha": 2.0, "beta": 8.0}),
                    _prediction("a", 0.6, 0.02, {"alpha": 6.0, "beta": 4.0})])  # fmt: skip
    assert beta.expected_unit == pytest.approx(0.4)
    assert beta.variance_unit == pytest.approx(0.015 + 0.04)  # mean variance + spread of means
    assert "probs" not in beta.distribution and len(beta.distribution["members"]) == 2
    with pytest.raises(ValueError, match="different items"):
        mixture([_prediction("a", 0.2, None, {"p": 0.2}), _prediction("b", 0.2, None, {"p": 0.2})])


def test_judges_of_other_likelihoods_are_not_one_ensemble():
    readings = [{"likelihood": "multinomial", "token limit": 8},
                {"likelihood": "beta", "token limit": 8}]  # fmt: skip
    problem = reading_problem(readings, ["a", "b"])
    assert problem.startswith("b has likelihood beta, a multinomial")
    assert reading_problem([readings[0], dict(readings[0])], ["a", "b"]) is None
