"""An honest curriculum: one held-out split per run, normalised questions, the shipped example."""

import json
from pathlib import Path

import pytest
import yaml
from orca_fixtures import synthetic_items, tiny_llama_dir, write_jsonl
from shared_data import shared_path

from orca_judge import data
from orca_judge.cli import train as cli_train
from orca_judge.data import load_items, question_disjoint_split
from orca_judge.training.heldout import split_heldout
from orca_judge.training.plan import load_stages, plan_stages

REPO = Path(__file__).resolve().parents[2]
SHIPPED = REPO / "configs" / "orca" / "curriculum.yaml"
TINY = ["--lora-r", "4", "--batch-size", "8", "--grad-accum", "1", "--warmup-steps", "0"]
TINY += ["--lr", "1e-3", "--no-progress"]


def _items(questions, prefix):
    return load_items(
        [
            {
                "id": f"{prefix}{i}",
                "question": q,
                "reference": "r",
                "candidate": "c",
                "ratings": [i % 5 + 1],
            }
            for i, q in enumerate(questions)
        ]
    )


def test_questions_match_ignoring_case_whitespace_and_punctuation():
    assert data.normalize_question("What type of video might this be?") == data.normalize_question(
        "  what type of   video might this be "
    )
    dev = _items(["What type of video might this be", "Who speaks?", "Why?"] * 2, "d")
    for seed in range(10):
        kept, held = question_disjoint_split(
            dev, 1.0, seed, exclude_questions={"What type of video might this be?"}
        )
        assert {it.question for it in kept} == {"What type of video might this be"}
        assert {it.question for it in held} == {"Who speaks?", "Why?"}


def test_variant_spellings_of_one_question_land_on_one_side_of_the_split():
    spellings = ["What sport is this?", "what sport is this", "WHAT SPORT IS THIS ?"]
    dev = _items(spellings + [f"Question {k}?" for k in range(9)], "d")
    for seed in range(20):
        kept, _ = question_disjoint_split(dev, 0.5, seed)
        sides = {("kept" if it in kept else "held") for it in dev[:3]}
        assert len(sides) == 1


def test_one_held_out_split_excludes_every_stages_training_questions_and_every_dev_set():
    stage1 = _items([f"Early question {k}?" for k in range(6)], "a")
    stage2 = _items([f"Late question {k}?" for k in range(6)], "b")
    dev = _items(
        [f"early question {k}" for k in range(6)]
        + [f"Late question {k}?" for k in range(6)]
        + [f"New question {k}?" for k in range(10)],
        "d",
    )
    for seed in range(10):
        (dev1, dev2), held = split_heldout([stage1, stage2], [dev, dev], 0.5, seed)
        assert len({it.question for it in held}) == 5
        assert all(it.question.startswith("New") for it in held)
        assert not {it.id for it in held} & {it.id for it in dev1 + dev2}
        assert dev1 == dev2 and len(dev1) + len(held) == len(dev)


@pytest.mark.slow
def test_curriculum_run_reports_every_stages_data_and_one_held_out_set(tmp_path, capsys):
    early = synthetic_items(32, 1, "a")
    late = synthetic_items(32, 3, "b")
    dev = synthetic_items(40, 2, "dv")
    for i, item in enumerate(dev[:16]):  # variant spellings of questions stage a trains on
        item["question"] = early[i]["question"].lower().rstrip("?") + " "
    write_jsonl(tmp_path / "early.jsonl", early)
    write_jsonl(tmp_path / "late.jsonl", late)
    write_jsonl(tmp_path / "dev.jsonl", dev)
    config = {
        "backbone": str(tiny_llama_dir()),
        "dev": "dev.jsonl",
        "max_steps": 2,
        "eval_every": 2,
        "stages": [{"name": "a", "train": "early.jsonl"}, {"name": "b", "train": "late.jsonl"}],
    }
    (tmp_path / "cur.yaml").write_text(yaml.safe_dump(config))
    argv = ["--config", str(tmp_path / "cur.yaml"), "--output", str(tmp_path / "out"), *TINY]
    assert cli_train.main([*argv, "--heldout-fraction", "0.5", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    trained = {data.normalize_question(it["question"]) for it in early + late}
    held = summary["heldout"]
    held_questions = {data.normalize_question(d["question"]) for d in dev if d["id"] in held["ids"]}
    assert held["items"] == len(held["ids"]) == held["n"] > 0 and held["questions"] == 4
    assert held["source"] == str(tmp_path / "dev.jsonl") and not held_questions & trained
    for stage, train_file in zip(summary["stages"], ["early.jsonl", "late.jsonl"], strict=True):
        assert stage["data"]["train_file"] == str(tmp_path / train_file)
        assert stage["data"]["dev_file"] == str(tmp_path / "dev.jsonl")
        assert stage["dev_items"] == 40 - held["items"]  # no stage validates on held-out items
    stored = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert [s["data"]["train_file"] for s in stored["curriculum"]] == [
        str(tmp_path / "early.jsonl"),
        str(tmp_path / "late.jsonl"),
    ]
    assert stored["heldout"]["items"] == held["items"]
    # the text report names the same things
    assert cli_train.main([*argv, "--heldout-fraction", "0.5"]) == 0
    text = capsys.readouterr().out
    assert f"data of a: train {tmp_path / 'early.jsonl'} (32 items)" in text
    assert f"data of b: train {tmp_path / 'late.jsonl'} (32 items)" in text
    assert f"held-out: {held['items']} items on 4 questions of {tmp_path / 'dev.jsonl'}" in text


@pytest.mark.slow
def test_python_plans_loads_and_splits_the_curriculum_the_command_trains(tmp_path, capsys):
    write_jsonl(tmp_path / "early.jsonl", synthetic_items(24, 1, "a"))
    write_jsonl(tmp_path / "late.jsonl", synthetic_items(24, 3, "b"))
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(30, 2, "dv"))
    config = {
        "backbone": str(tiny_llama_dir()),
        "dev": "dev.jsonl",
        "max_steps": 1,
        "eval_every": 1,
        "stages": [{"name": "a", "train": "early.jsonl"}, {"name": "b", "train": "late.jsonl"}],
    }
    (tmp_path / "cur.yaml").write_text(yaml.safe_dump(config))
    argv = ["--config", str(tmp_path / "cur.yaml"), "--output", str(tmp_path / "out"), *TINY]
    argv += ["--heldout-fraction", "0.5", "--split-seed", "3", "--json"]
    assert cli_train.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    # The same from Python: the YAML, the flags as overrides, the split settings.
    flags = {"lora_r": 4, "batch_size": 8, "grad_accum": 1, "warmup_steps": 0, "lr": 1e-3}
    plans = plan_stages(tmp_path / "cur.yaml", overrides=flags)
    assert [(p.name, p.train, p.dev) for p in plans] == [
        (name, str(tmp_path / train), str(tmp_path / "dev.jsonl"))
        for name, train in (("a", "early.jsonl"), ("b", "late.jsonl"))
    ]
    curriculum = load_stages(plans, heldout_fraction=0.5, split_seed=3)
    assert [it.id for it in curriculum.heldout] == summary["heldout"]["ids"]
    assert curriculum.heldout_source == summary["heldout"]["source"]
    for stage, ran in zip(curriculum.stages, summary["stages"], strict=True):
        assert stage.provenance == ran["data"] and len(stage.dev_items) == ran["dev_items"]
        assert (stage.config.lora_r, stage.training.lr, stage.training.max_steps) == (4, 1e-3, 1)
    # The checkpoint the command wrote records the Python plan's settings, split in two.
    recorded = json.loads((tmp_path / "out" / "training_args.json").read_text(encoding="utf-8"))
    training = curriculum.stages[-1].training
    processes = {"world_size": 1, "per_process_batch": training.batch_size}
    assert recorded == {**training.to_dict(), **processes}


def test_plan_refuses_an_override_that_is_no_setting():
    with pytest.raises(ValueError, match="unknown OrcaConfig or TrainingArguments fields: lr_max"):
        plan_stages(SHIPPED, overrides={"lr_max": 1.0})
    with pytest.raises(ValueError, match=r"heldout_fraction: expected a share .* got 1\.0"):
        load_stages(plan_stages(SHIPPED), heldout_fraction=1.0)


def test_shipped_curriculum_reads_its_stage_files_from_the_data_dir(tmp_path):
    stages = plan_stages(SHIPPED)
    data_dir = (SHIPPED.parent / yaml.safe_load(SHIPPED.read_text())["data_dir"]).resolve()
    assert [s.name for s in stages] == ["s1-human", "s2-human-anneal"]
    assert [(Path(s.train).resolve(), Path(s.dev).resolve()) for s in stages] == [
        (data_dir / "train.jsonl", data_dir / "dev.jsonl")
    ] * 2
    assert {s.train for s in plan_stages(SHIPPED, data_dir=tmp_path)} == {
        str(tmp_path / "train.jsonl")
    }


def _run_shipped(data_dir, output, capsys):
    argv = ["--config", str(SHIPPED), "--data-dir", str(data_dir), "--output", str(output)]
    argv += ["--backbone", str(tiny_llama_dir()), "--max-steps", "1", "--eval-every", "1"]
    argv += ["--heldout-fraction", "0.5", "--split-seed", "0", "--json", *TINY]
    assert cli_train.main(argv) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.slow
def test_shipped_curriculum_trains_one_step_per_stage_on_a_tiny_model(tmp_path, capsys):
    write_jsonl(tmp_path / "train.jsonl", synthetic_items(24, 1, "tr"))
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(30, 2, "dv"))
    summary = _run_shipped(tmp_path, tmp_path / "out", capsys)
    assert [s["name"] for s in summary["stages"]] == ["s1-human", "s2-human-anneal"]
    assert [s["steps"] for s in summary["stages"]] == [1, 1] and summary["heldout"]["items"] > 0


# The human ratings in the tests' shared data, passed explicitly (the configs read
# data/orca-human/, which `orca fetch-ratings` writes).
HUMAN = shared_path("orca-human").resolve()


@pytest.mark.shared_data("orca-human")
def test_shipped_curriculum_loads_and_splits_the_human_ratings_as_shipped():
    planned = load_stages(plan_stages(SHIPPED, data_dir=HUMAN), heldout_fraction=0.5)
    stages, heldout, source = planned.stages, planned.heldout, planned.heldout_source
    trained = {data.normalize_question(it.question) for s in stages for it in s.train_items}
    dev = load_items(HUMAN / "dev.jsonl")
    assert Path(source).resolve() == HUMAN / "dev.jsonl" and heldout
    assert not {data.normalize_question(it.question) for it in heldout} & trained
    assert [len(s.dev_items) for s in stages] == [len(dev) - len(heldout)] * 2
    assert [s.training.max_steps for s in stages] == [360, 120]


SYNTHETIC = REPO / "configs" / "orca" / "curriculum-synthetic.yaml"


@pytest.mark.slow
def test_a_synthesize_stage_trains_on_rule_rated_candidates_built_from_its_file(tmp_path, capsys):
    from orca_judge.training.synthetic import build_synthetic_items

    train = synthetic_items(24, 1, "tr")
    for i, item in enumerate(train):
        item["reference"] = f"the {['sun', 'moon', 'rain'][i % 3]} over a quiet sea"
    write_jsonl(tmp_path / "train.jsonl", train)
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(30, 2, "dv"))
    argv = ["--config", str(SYNTHETIC), "--data-dir", str(tmp_path), "--output"]
    argv += [str(tmp_path / "out"), "--backbone", str(tiny_llama_dir()), "--max-steps", "1"]
    argv += ["--eval-every", "1", "--heldout-fraction", "0.5", "--json", *TINY]
    assert cli_train.main(argv) == 0
    summary = json.loads(capsys.readouterr().out)
    built, _ = build_synthetic_items(load_items(tmp_path / "train.jsonl"), seed=0)
    s0, s1 = summary["stages"]
    assert (s0["name"], s1["name"]) == ("s0-synthetic", "s1-human")
    assert s0["train_items"] == len(built) != len(train) and s1["train_items"] == len(train)
    assert s0["data"]["train_synthesized"] == "rule-rated (orca synthesize)"
    assert "train_synthesized" not in s1["data"]
    assert s0["data"]["train_file"] == s1["data"]["train_file"] == str(tmp_path / "train.jsonl")
    stored = json.loads((tmp_path / "out" / "metrics.json").read_text())
    assert stored["curriculum"][0]["data"]["train_synthesized"]
    # a value that is not a boolean is refused, naming the stage
    config = yaml.safe_load(SYNTHETIC.read_text())
    config["stages"][0]["synthesize"] = "maybe"
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump(config))
    argv[1] = str(tmp_path / "bad.yaml")
    assert cli_train.main(argv) == 2
    assert "stage s0-synthetic: synthesize='maybe': expected true/false" in capsys.readouterr().err


@pytest.mark.shared_data("orca-human")
def test_shipped_synthetic_curriculum_keeps_the_plain_held_out_split():
    def load(config):
        return load_stages(plan_stages(config, data_dir=HUMAN), heldout_fraction=0.5)

    synthetic, plain = load(SYNTHETIC), load(SHIPPED)
    (s0, s1), heldout, plain_heldout = synthetic.stages, synthetic.heldout, plain.heldout
    assert [it.id for it in heldout] == [it.id for it in plain_heldout] and len(heldout) == 116
    assert all("#" in it.id for it in s0.train_items) and len(s0.train_items) == 3180
    assert len(s1.train_items) == 1923 and s0.dev_items == s1.dev_items


def test_training_data_fingerprints_see_the_rules_the_seed_and_the_files(tmp_path, monkeypatch):
    """The seed table keys finished runs on these: a config's hash alone misses a change to
    the rules that build a synthesized stage, or to a data file it names."""
    from orca_judge.data import file_sha256
    from orca_judge.training import synthetic
    from orca_judge.training.plan import training_data_fingerprints

    rated = [
        {"id": f"t{i}", "question": f"What sound is heard {i}?", "reference": f"a bell {i} times",
         "candidate": "a bell", "ratings": [i % 5 + 1]}
        for i in range(12)
    ]  # fmt: skip
    write_jsonl(tmp_path / "train.jsonl", rated)
    write_jsonl(tmp_path / "dev.jsonl", synthetic_items(12, 2, "dv"))
    config = {
        "backbone": "unused",
        "dev": "dev.jsonl",
        "train": "train.jsonl",
        "stages": [{"name": "rules", "synthesize": True}, {"name": "human"}],
    }
    (tmp_path / "cur.yaml").write_text(yaml.safe_dump(config))

    def fingerprints(seed: int = 0) -> dict:
        return training_data_fingerprints(
            plan_stages(tmp_path / "cur.yaml", overrides={"seed": seed})
        )

    first = fingerprints()
    dev = file_sha256(tmp_path / "dev.jsonl")
    assert first["human"] == {"train": file_sha256(tmp_path / "train.jsonl"), "dev": dev}
    assert first["rules"]["dev"] == dev and first["rules"]["train"] != first["human"]["train"]
    assert fingerprints() == first  # deterministic
    # What the trainer builds from the same plan is what was fingerprinted.
    built = load_stages(plan_stages(tmp_path / "cur.yaml")).stages[0].train_items
    assert data.items_fingerprint(built) == first["rules"]["train"]
    assert fingerprints(seed=1)["rules"]["train"] != first["rules"]["train"]
    # Another wording among the rule's non-answers: the same config, other training data.
    monkeypatch.setattr(synthetic, "NON_ANSWERS", ("Nobody knows.", *synthetic.NON_ANSWERS[1:]))
    changed = fingerprints()
    assert changed["rules"]["train"] != first["rules"]["train"]
    assert changed["human"] == first["human"]
