"""The 0.5 line of lm-eval gives the figures 0.4.13 gives (tests/release_figures.py), through
its public API: the AQUA scorer, models registered by name, the task folder indexed."""

from __future__ import annotations

import json
from importlib.metadata import version

import pytest
from release_figures import COMMANDS, EXPECTED, run_command, task_figures

pytestmark = pytest.mark.shared_data("aqua-bench")


def test_this_environment_runs_the_next_release_line():
    import lm_eval.scorers  # noqa: F401  (the public scoring pipeline of 0.5)

    assert version("lm_eval").startswith("0.5.")


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_figures_match_the_ones_both_releases_share(name, released_dir, tmp_path):
    expected = json.loads(EXPECTED.read_text())[name]
    assert task_figures(run_command(name, released_dir, tmp_path)) == expected


def test_the_aqua_group_shows_no_averaged_figure(released_dir, tmp_path):
    # lm-eval 0.5 could only average the tracks, which is no conditional accuracy.
    results = run_command("aqua_group_limit_8", released_dir, tmp_path)
    assert not [k for k in results["results"]["aqua"] if "," in k]
