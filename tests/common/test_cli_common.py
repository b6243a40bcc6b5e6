"""Shared CLI pieces: the error exit, the one boolean parser, common flags and progress bars."""

import argparse

import pytest

from eval_common.cli import (
    add_json_flag,
    add_progress_flag,
    add_seed_flag,
    bool_arg,
    fail,
    number_problem,
    parse_bool,
    progress,
)


def test_fail_prints_one_prefixed_line_to_stderr_and_returns_two(capsys):
    assert fail("aqua-x", "no such file: a.jsonl") == 2
    captured = capsys.readouterr()
    assert captured.err == "aqua-x: error: no such file: a.jsonl\n" and captured.out == ""


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (True, True),
        (False, False),
        (1, True),
        (0, False),
        ("1", True),
        ("0", False),
        ("TRUE", True),
        (" false ", False),
        ("Yes", True),
        ("no", False),
        ("ON", True),
        ("off", False),
    ],
)
def test_parse_bool_accepts_the_usual_spellings_in_any_case(value, expected):
    assert parse_bool("flag", value) is expected


@pytest.mark.parametrize("value", ["maybe", "", "2", 2, None, 1.0, "t"])
def test_parse_bool_rejects_anything_else_naming_the_setting(value):
    with pytest.raises(ValueError, match=r"^trust_remote_code=.*expected true/false"):
        parse_bool("trust_remote_code", value)


def test_bool_arg_turns_a_bad_flag_value_into_an_argparse_error_naming_the_flag(capsys):
    parser = argparse.ArgumentParser(prog="tool")
    parser.add_argument("--use-question", type=bool_arg)
    assert parser.parse_args(["--use-question", "off"]).use_question is False
    with pytest.raises(SystemExit) as exit_info:
        parser.parse_args(["--use-question", "perhaps"])
    assert exit_info.value.code == 2
    assert capsys.readouterr().err.endswith(
        "tool: error: argument --use-question: expected true/false, yes/no, on/off or 1/0, "
        "got 'perhaps'\n"
    )


def test_shared_flags_parse_with_their_defaults_and_overrides():
    parser = argparse.ArgumentParser(prog="tool")
    add_json_flag(parser)
    add_seed_flag(parser, default=7, help="bootstrap seed")
    add_progress_flag(parser)
    defaults = parser.parse_args([])
    assert (defaults.json, defaults.seed, defaults.no_progress) == (False, 7, False)
    given = parser.parse_args(["--json", "--seed", "3", "--no-progress"])
    assert (given.json, given.seed, given.no_progress) == (True, 3, True)
    assert "bootstrap seed (default: 7)" in parser.format_help()


def test_progress_yields_every_item_and_draws_nothing_when_disabled(capsys):
    assert list(progress(range(5), "scoring", enabled=False)) == [0, 1, 2, 3, 4]
    assert capsys.readouterr().err == ""


def test_manual_progress_bar_counts_from_its_initial_value(capsys):
    bar = progress(None, "train", True, unit="step", total=10, initial=4)
    bar.update(3)
    assert bar.n == 7 and bar.total == 10
    bar.close()
    assert "train" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("value", "kwargs", "refused"),
    [
        (float("nan"), {"minimum": 0}, True),
        (float("inf"), {"minimum": 0}, True),
        (-0.5, {"minimum": 0}, True),
        (0.0, {"minimum": 0}, False),
        (0.0, {"minimum": 0, "maximum": 1, "open_interval": True}, True),
        (1.0, {"minimum": 0, "maximum": 1, "open_interval": True}, True),
        (0.05, {"minimum": 0, "maximum": 1, "open_interval": True}, False),
        (5000, {"minimum": 1}, False),
    ],
)
def test_number_problem_refuses_non_finite_and_out_of_range_values(value, kwargs, refused):
    problem = number_problem("--x", value, **kwargs)
    assert (problem is not None) is refused
    if refused:
        assert problem.startswith("--x: expected a finite number with ")
        assert problem.endswith(f"got {value!r}")
