"""A real `lmms-eval` run without the AQUA data folder stops with the setting named."""

from __future__ import annotations

from conftest import BIN, run_cli

from aqua_tasks.lmms_eval import include_path
from aqua_tasks.lmms_eval.task import METADATA_ENV


def test_lmms_eval_run_without_data_folder_fails_with_the_setting_named(tmp_path):
    done = run_cli(
        BIN / "lmms-eval",
        *("--include_path", include_path(), "--model", "aqua-always-reject"),
        *("--tasks", "aqua_animal", "--output_path", tmp_path),
        env={METADATA_ENV: ""},
    )
    # lmms-eval reports the task's error on one line (and, at default verbosity, exits 0).
    assert "Error during evaluation: no AQUA data folder given" in done.stdout + done.stderr
    assert METADATA_ENV in done.stderr
