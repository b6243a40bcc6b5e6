"""orca fetch-ratings: the public dataset's rows into data/orca-human/, never from the network.

The dataset is stood in for by `datasets` objects built in memory from the real human-rated
items (tests' shared data) with the public dataset's other columns added, and by a local copy
that `datasets.load_dataset` reads from files.
"""

from __future__ import annotations

import json
from pathlib import Path

import datasets
import pytest
import yaml
from shared_data import shared_data

from orca_judge.cli import fetch_ratings as cli_fetch
from orca_judge.data import load_items
from orca_judge.errors import DataError
from orca_judge.human_ratings import human_rating_splits, write_human_ratings
from orca_judge.training.plan import plan_stages

REPO = Path(__file__).resolve().parents[2]
N = {"train": 12, "dev": 5}


def real_rows(name: str) -> list[dict]:
    lines = (shared_data("orca-human") / f"{name}.jsonl").read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines[: N[name]]]


def published(rows: list[dict], split: str, rating_source: str = "human") -> list[dict]:
    """Rows in the public dataset's columns (its extra columns included)."""
    extra = {"model": "qwen2-audio", "source": "mmau", "split": split, "quality": "ok"}
    return [{**r, **extra, "rating_source": rating_source} for r in rows]


@pytest.fixture(scope="module")
def dataset() -> datasets.DatasetDict:
    """One split holding every row, told apart by its `split` and `rating_source` columns."""
    rows = [
        *published(real_rows("train"), "train"),
        *published(real_rows("dev"), "dev"),
        *published(real_rows("train")[:3], "train", "llm-judge"),
    ]
    for i, row in enumerate(rows[-3:]):
        row["id"] = f"llm-{i}"
    return datasets.DatasetDict({"train": datasets.Dataset.from_list(rows)})


def test_human_rows_are_written_in_the_layout_the_configs_read(dataset, tmp_path):
    ratings = human_rating_splits(dataset)
    assert ratings.counts() == N and ratings.skipped == {"rating_source 'llm-judge'": 3}
    out = write_human_ratings(ratings, tmp_path / "data" / "orca-human")
    for name in ("train", "dev"):
        written = [json.loads(x) for x in (out / f"{name}.jsonl").read_text().splitlines()]
        assert written == real_rows(name)  # the seven fields, values as published
    assert "CC-BY-4.0" in (out / "README.md").read_text()
    # What orca train reads from the configs' data_dir.
    for stage in plan_stages(REPO / "configs" / "orca" / "curriculum.yaml", data_dir=out):
        assert stage.train == str(out / "train.jsonl") and stage.dev == str(out / "dev.jsonl")
        assert len(load_items(stage.train, require_ratings=True)) == N["train"]


def test_hub_split_names_map_to_the_files_without_a_split_column():
    rows = {k: [{**r, "rating_source": "human"} for r in real_rows(k)] for k in N}
    by_split = datasets.DatasetDict(
        {
            "train": datasets.Dataset.from_list(rows["train"]),
            "validation": datasets.Dataset.from_list(rows["dev"]),
        }
    )
    assert human_rating_splits(by_split).counts() == N


def test_columns_other_than_expected_are_refused_naming_them(dataset):
    renamed = dataset.rename_column("ratings", "scores")
    with pytest.raises(DataError) as err:
        human_rating_splits(renamed)
    assert "split 'train': no column 'ratings'; expected id, question, reference" in str(err.value)
    assert "found id, question" in str(err.value) and "scores" in str(err.value)


def test_bad_rows_and_missing_splits_are_refused_with_the_row_and_field(dataset):
    bad = dataset["train"].map(
        lambda row, i: {"ratings": [6] if i == 4 else row["ratings"]}, with_indices=True
    )
    with pytest.raises(DataError, match=r"train row 4: field 'ratings' has 6; ratings must be"):
        human_rating_splits(bad)
    train_only = dataset["train"].filter(lambda row: row["split"] == "train")
    with pytest.raises(
        DataError, match=r"no human-rated rows for dev \(items found: train 12; left out: 3 rows"
    ):
        human_rating_splits(train_only)
    with pytest.raises(DataError, match="no annotator-rated rows for train and dev"):
        human_rating_splits(dataset, rating_source="annotator")


def test_the_command_reads_a_local_copy_and_never_replaces_files_unasked(tmp_path, capsys):
    copy = tmp_path / "copy"
    copy.mkdir()
    for name in N:  # a local copy as files: datasets reads train.jsonl and dev.jsonl as splits
        rows = published(real_rows(name), name)
        (copy / f"{name}.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / "data" / "orca-human"
    args = ["--source", str(copy), "--output", str(out)]
    assert cli_fetch.main([*args, "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["items"] == N
    assert load_items(out / "dev.jsonl", require_ratings=True)[0].id == real_rows("dev")[0]["id"]
    assert cli_fetch.main(args) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert line == (
        f"orca fetch-ratings: error: {out}: already holds train.jsonl, dev.jsonl; pass "
        "--overwrite to replace them"
    )
    assert cli_fetch.main([*args, "--overwrite"]) == 0
    assert "wrote train.jsonl (12 items), dev.jsonl (5 items)" in capsys.readouterr().out


@pytest.mark.parametrize(
    "config",
    [
        "curriculum.yaml",
        "curriculum-synthetic.yaml",
        "curriculum-synthetic-abstention.yaml",
        "curriculum-3stage.yaml",
    ],
)
def test_the_configs_read_data_orca_human_in_the_repository_and_name_the_command(config):
    path = REPO / "configs" / "orca" / config
    data_dir = yaml.safe_load(path.read_text())["data_dir"]
    assert (path.parent / data_dir).resolve() == REPO / "data" / "orca-human"
    assert "orca fetch-ratings --output data/orca-human" in path.read_text()
    assert "shared/data" not in path.read_text()


def test_the_abstention_config_plans_the_abstention_kinds_before_and_after_the_humans(tmp_path):
    from orca_judge.training.plan import plan_stages
    from orca_judge.training.synthetic import ABSTENTION_KINDS, DEFAULT_KINDS

    for name in ("train.jsonl", "dev.jsonl"):
        (tmp_path / name).write_text("")
    config = REPO / "configs" / "orca" / "curriculum-synthetic-abstention.yaml"
    plain = REPO / "configs" / "orca" / "curriculum-synthetic.yaml"
    stages = plan_stages(config, data_dir=tmp_path, overrides={"backbone": "b"})
    last = ("reference", "other-reference", "non-answer", *ABSTENTION_KINDS)
    assert [s.synthesize for s in stages] == [DEFAULT_KINDS + ABSTENTION_KINDS, (), last]
    # The recommended recipe's two stages, then a short one that keeps its last step.
    same = plan_stages(plain, data_dir=tmp_path, overrides={"backbone": "b"})
    assert [s.settings for s in stages[:2]] == [s.settings for s in same]
    assert stages[2].settings["select"] == "last"
    assert stages[2].settings["max_steps"] == 40 and stages[2].settings["lr"] < 1e-4
