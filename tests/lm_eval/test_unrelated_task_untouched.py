"""Installed, the package leaves a run of an unrelated task as lm-eval prints it: the same
results table, byte for byte, with the start-up hook on as with it off (AQUA_LM_EVAL_HOOK=0)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from eval_plugins.startup_hook import ENV_SWITCH

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TASK = """\
task: plain_qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Q: {{{{question}}}}\\nA:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: ["\\n"]
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""


def run(tasks: Path, hook: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1", ENV_SWITCH: hook}
    args = ["--model", "dummy", "--tasks", "plain_qa", "--include_path", str(tasks)]
    return subprocess.run(
        [str(BIN / "lm_eval"), *args], capture_output=True, text=True, timeout=600, env=env
    )


def test_an_unrelated_tasks_printed_results_are_byte_identical_with_and_without_the_hook(
    tmp_path,
):
    data = tmp_path / "qa.jsonl"
    rows = [{"question": f"{i} + 1?", "answer": str(i + 1)} for i in range(8)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (tmp_path / "tasks").mkdir()
    (tmp_path / "tasks" / "plain_qa.yaml").write_text(TASK.format(data=data))
    on, off = run(tmp_path / "tasks", "1"), run(tmp_path / "tasks", "0")
    assert on.returncode == off.returncode == 0, on.stderr[-2000:] + off.stderr[-2000:]
    assert "|plain_qa|" in on.stdout.replace(" ", "")
    assert on.stdout == off.stdout
