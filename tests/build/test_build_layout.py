"""aqua build's output is checked by the readers' own layout rules before it is written."""

from __future__ import annotations

import contextlib
import io

import pytest
from shared_data import shared_path

from aqua_tasks.build.builder import BuildResult, write_result
from aqua_tasks.cli import build as cli_build
from aqua_tasks.core.data import load_items, load_json_file
from aqua_tasks.errors import AquaDataError

pytestmark = pytest.mark.shared_data("mmau")
MMAU = shared_path("mmau") / "mmau-test-mini.json"
MMAU_FILE = "AQUA-Bench-MMAU-Track.json"


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    out = tmp_path_factory.mktemp("mmau-layout")
    with contextlib.redirect_stdout(io.StringIO()):
        code = cli_build.main(
            [
                *("--source", "mmau", "--input", str(MMAU), "--output", str(out)),
                *("--limit", "40", "--no-progress"),
            ]
        )
    assert code == 0
    return out


def test_the_built_mmau_file_loads_under_the_layout_checks(built):
    items = load_items(built, "mmau")
    assert len(items) % 4 == 0 and len(items) >= 4 * 35  # a few source items are skipped
    assert all(f"(a) {i.options[0]}" in i.question for i in items)


def test_a_built_entry_whose_inline_options_disagree_is_never_written(built, tmp_path):
    entries = load_json_file(built / MMAU_FILE)
    entries[1]["options"] = list(reversed(entries[1]["options"]))
    output = tmp_path / MMAU_FILE
    with pytest.raises(AquaDataError, match=r"entry 1 \(id \d+\): field 'question' inline option"):
        write_result(BuildResult(entries, {}), output)
    assert not output.exists()
