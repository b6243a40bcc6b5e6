"""Task names: every family × track parsed and formatted alike, other names refused, one rule."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from aqua_tasks.core.data import KNOWN_TRACKS
from aqua_tasks.core.pooling import all_tracks_name, all_tracks_rows, pooled_tracks
from aqua_tasks.core.task_name import (
    CHOICE_FAMILIES,
    FAMILIES,
    MAIN_FAMILY,
    OPEN_FAMILY,
    TaskName,
    choice_task,
)
from aqua_tasks.errors import AquaDataError
from aqua_tasks.reports.run_metrics import split_task

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize("track", KNOWN_TRACKS)
@pytest.mark.parametrize("family", FAMILIES)
def test_every_family_and_track_round_trips(family, track):
    name = TaskName(family, track)
    assert str(name) == name.format() == f"{family}_{track}"
    assert TaskName.parse(str(name)) == name


def test_families_name_their_setting_design_and_prompt():
    expected = {
        "aqua": ("", "main", "plain", "aqua"),
        "aqua-design1": ("design1", "option_design1", "plain", "aqua-design1"),
        "aqua-design2": ("design2", "option_design2", "plain", "aqua-design2"),
        "aqua-hint": ("hint", "uncertainty", "plain", "aqua-hint"),
        "aqua-cot": ("cot", "main", "cot", "aqua-cot"),
        "aqua-open": ("open", None, None, None),
    }
    got = {}
    for family in FAMILIES:
        name = TaskName(family, "music")
        got[family] = (name.setting, name.variant, name.prompt_style, name.group)
    assert got == expected
    assert [TaskName(f, "vocal").is_open_ended for f in FAMILIES] == [False] * 5 + [True]


@pytest.mark.parametrize(
    "name",
    [
        "aqua",  # the group, not a task
        "aqua-cot",
        "aqua_",
        "aqua_birds",  # no such track
        "aqua_Animal",
        "aqua-foo_animal",  # no such family
        "aqua-animal",
        "aqua__animal",
        "aqua_animal_short",  # a user's copy of a task under another name
        "aqua_judged_animal",
        "my_aqua_animal",
        "mmlu",
        "",
    ],
)
def test_other_names_are_not_aqua_task_names(name):
    assert TaskName.parse(name) is None
    assert choice_task(name) is None


def test_a_bad_family_or_track_is_refused_in_one_line():
    with pytest.raises(
        AquaDataError, match=r"^unknown task family 'aqua-x'; expected one of aqua,"
    ):
        TaskName("aqua-x", "animal")
    with pytest.raises(AquaDataError, match=r"^unknown track 'birds'; expected one of animal,"):
        TaskName(MAIN_FAMILY, "birds")


def test_tasks_for_questions_of_a_design_and_prompt():
    assert TaskName.for_questions("animal") == TaskName("aqua", "animal")
    assert str(TaskName.for_questions("vocal", "uncertainty")) == "aqua-hint_vocal"
    assert str(TaskName.for_questions("music", "main", "cot")) == "aqua-cot_music"
    for family, (variant, prompt) in CHOICE_FAMILIES.items():
        assert TaskName.for_questions("animal", variant, prompt).family == family
    assert str(TaskName.for_questions("mmau")) == "aqua_mmau"
    with pytest.raises(AquaDataError, match=r"^the mmau track has one task only, aqua_mmau$"):
        TaskName.for_questions("mmau", "main", "cot")
    with pytest.raises(AquaDataError, match=r"^no task for variant 'option_design1' with prompt"):
        TaskName.for_questions("animal", "option_design1", "cot")


def test_open_ended_tasks_stand_outside_every_multiple_choice_row():
    assert TaskName.parse("aqua-open_animal") == TaskName(OPEN_FAMILY, "animal")
    assert choice_task("aqua-open_animal") is None
    assert all_tracks_name("aqua-open_animal") is None
    assert split_task("aqua-open_animal") == ("", "aqua-open_animal")
    assert split_task("aqua-open") == ("", "aqua-open")
    tasks = ["aqua-open_animal", "aqua-open_music", "aqua_animal", "aqua_music"]
    assert all_tracks_rows(tasks) == {"aqua": ["aqua_animal", "aqua_music"]}


def test_pooling_and_reports_read_names_by_the_same_rule():
    assert [all_tracks_name(t) for t in ("aqua_music", "aqua-cot_vocal", "aqua_mmau")] == [
        "aqua",
        "aqua-cot",
        "aqua",
    ]
    assert pooled_tracks(["aqua-hint_animal", "aqua-hint_vocal"]) == ["animal", "vocal"]
    assert split_task("aqua-design2_music") == ("design2", "music")
    assert split_task("aqua") == ("", "all") and split_task("aqua-cot") == ("cot", "all")
    # One rule for every reader: a user's copy named outside the family × track grid is a
    # task of its own, pooled into no AQUA row and reported under its whole name.
    assert all_tracks_name("aqua_judged_animal") is None
    assert split_task("aqua_judged_animal") == ("", "aqua_judged_animal")
    assert all_tracks_rows(["aqua_animal", "aqua_judged_animal"]) == {}


def _task_yamls(folder: Path) -> list[Path]:
    return sorted(folder.glob("aqua*_*.yaml"))


@pytest.mark.parametrize("folder", ["task_configs", "lmms_task_configs"])
def test_every_shipped_task_name_says_the_questions_it_asks(folder):
    yamls = _task_yamls(REPO / folder)
    assert len(yamls) == 20  # 16 multiple-choice tasks, 4 open-ended
    for path in yamls:
        config = yaml.safe_load(path.read_text(encoding="utf-8"))
        parsed = TaskName.parse(config["task"])
        if parsed is not None and parsed.is_open_ended:
            assert path.stem == config["task"] and config["dataset_kwargs"] == {
                "track": parsed.track,
                "form": "open",
            }, path
            continue
        name = choice_task(config["task"])
        assert name is not None and path.stem == config["task"], path
        asked = config["dataset_kwargs"]
        assert (name.track, name.variant, name.prompt_style) == (
            asked["track"],
            asked["variant"],
            asked["prompt"],
        ), path
