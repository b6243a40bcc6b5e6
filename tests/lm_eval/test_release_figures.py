"""lm-eval 0.4.13 gives the figures the 0.5 line gives (tests/release_figures.py)."""

from __future__ import annotations

import json

import pytest
from release_figures import COMMANDS, EXPECTED, run_command, task_figures

pytestmark = [pytest.mark.slow, pytest.mark.shared_data("aqua-bench")]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_figures_match_the_ones_both_releases_share(name, released_dir, tmp_path):
    expected = json.loads(EXPECTED.read_text())[name]
    assert task_figures(run_command(name, released_dir, tmp_path)) == expected
