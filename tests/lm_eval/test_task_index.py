"""AQUA-only runs index the AQUA and --include_path folders without lm-eval's built-in tasks.

The decision is unit-tested on its own; then real TaskManagers and the real `aqua eval` and
plain `lm_eval` command lines show which folders lm-eval indexed (its own DEBUG log line).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from argparse import Namespace
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.lm_eval.aqua.task_index import (
    OWN_PREFIXES,
    covers,
    indexing_for,
    may_skip_builtins,
    may_skip_defaults,
    requested_tasks,
)
from eval_plugins.startup_hook import ENV_SWITCH

BIN = Path(sys.executable).parent
LIMIT = 4
# Our folder as an index: name -> a group's members or a tag's tasks ([] for a task).
OURS = {
    "aqua": ["aqua_animal", "aqua_music", "aqua_vocal"],
    "aqua_animal": [],
    "aqua_music": [],
    "aqua_vocal": [],
    "aqua-cot_animal": [],
    "orca_human": [],
}
USER_TASK = """\
task: my_qa
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Q: {{{{q}}}}\\nA:"
doc_to_target: "{{{{answer}}}}"
generation_kwargs:
  until: []
  max_gen_toks: 4
metric_list:
  - metric: exact_match
    aggregation: mean
    higher_is_better: true
metadata:
  version: 1.0
"""
INDEX_LINE = re.compile(r"Building task index from \[(.*)\]")


@pytest.mark.parametrize(
    "pattern",
    ["aqua_animal", "aqua", "orca_human", "hellaswag", "aqua_*", "aqua-*_animal", "aqua?music"],
)
def test_names_and_globs_over_our_prefixes_may_skip_the_builtins(pattern):
    assert may_skip_builtins(pattern)


@pytest.mark.parametrize(
    "pattern",
    ["*", "*_animal", "arc_*", "a*", "[a]qua_animal", "tasks/aqua_animal.yaml", "my.yaml", "",
     " aqua_animal", "../tasks"],
)  # fmt: skip
def test_globs_built_in_names_could_match_and_paths_keep_the_builtins(pattern):
    assert not may_skip_builtins(pattern)


def test_a_runs_tasks_are_read_from_comma_lists_and_a_config_file_keeps_the_builtins():
    assert requested_tasks(Namespace(tasks=["aqua_animal,aqua_music", "orca_human"])) == (
        "aqua_animal",
        "aqua_music",
        "orca_human",
    )
    assert requested_tasks(Namespace(tasks="aqua_*")) == ("aqua_*",)
    assert requested_tasks(Namespace(tasks=["aqua_animal", "*_easy"])) is None
    assert requested_tasks(Namespace(tasks=["aqua_animal"], config="run.yaml")) is None
    assert requested_tasks(Namespace(tasks=None)) is None
    assert requested_tasks(Namespace()) is None


def test_only_a_command_line_run_may_skip_the_builtins():
    assert not may_skip_defaults()
    with indexing_for(Namespace(tasks=["aqua_animal"])):
        assert may_skip_defaults()
        with indexing_for(Namespace(tasks=["arc_easy", "*_easy"])):
            assert not may_skip_defaults()
        assert may_skip_defaults()
    assert not may_skip_defaults()


def test_an_index_of_our_folders_covers_its_names_groups_and_our_globs():
    assert covers(["aqua_animal"], OURS)
    assert covers(["aqua"], OURS)
    assert covers(["aqua_*", "orca_human"], OURS)
    users = {**OURS, "my_qa": [], "my_group": ["my_qa", {"task": "aqua_music", "num_fewshot": 1}]}
    assert covers(["aqua_animal", "my_group"], users)
    assert covers(["my_tag"], {**users, "my_tag": ["my_qa"]})


def test_a_name_a_group_member_or_an_inline_task_it_lacks_needs_the_builtins():
    assert not covers(["aqua_animal", "arc_easy"], OURS)  # a built-in task
    assert not covers(["aqua_animl"], OURS)  # a typo: lm-eval's full list for "did you mean"
    assert not covers(["aqua_nothing_*"], OURS)  # a glob matching none of ours
    assert not covers(["*_animal"], OURS)  # built-in names could match too
    assert not covers(["my_group"], {**OURS, "my_group": ["my_qa", "arc_easy"]})
    assert not covers(["my_group"], {**OURS, "my_group": [{"task": "arc_easy", "limit": 1}]})
    assert not covers(["my_group"], {**OURS, "my_group": [{"num_fewshot": 1}]})
    assert not covers(["outer"], {**OURS, "outer": ["inner"], "inner": ["hellaswag"]})
    for odd in (["aqua_animal"], {"group": ["a", "b"]}, 3, None):  # not lm-eval's shapes
        assert not covers(["my_group"], {**OURS, "my_group": [odd]})


def test_an_inline_group_is_covered_by_its_members():
    inline = {"group": "inline", "task": ["aqua_animal", {"task": "aqua_music"}]}
    assert covers(["my_group"], {**OURS, "my_group": [inline]})
    inline["task"].append("arc_easy")
    assert not covers(["my_group"], {**OURS, "my_group": [inline]})


@pytest.fixture(scope="module")
def task_manager_cls() -> type:
    """lm-eval's TaskManager as the start-up hook (or aqua eval) leaves it."""
    from lm_eval.tasks import TaskManager

    from eval_plugins.lm_eval.registration import install_task_folder

    install_task_folder(TaskManager)
    return TaskManager


@pytest.mark.slow
def test_a_task_manager_of_an_aqua_only_run_indexes_our_folder_alone(task_manager_cls):
    with indexing_for(Namespace(tasks=["aqua_*", "orca_human"])):
        manager = task_manager_cls(metadata={})
    ours = {path.stem for path in task_config_dir().rglob("*.yaml")}
    assert set(manager.all_tasks) == ours


@pytest.mark.slow
def test_a_run_naming_a_builtin_task_or_no_run_keeps_the_full_index(
    task_manager_cls, builtin_index_parsed_once
):
    with indexing_for(Namespace(tasks=["aqua_animal,arc_easy"])):
        mixed = task_manager_cls()
    with indexing_for(Namespace(tasks=["aqua_animl"])):
        typo = task_manager_cls()
    outside = task_manager_cls()
    for manager in (mixed, typo, outside):
        assert {"arc_easy", "hellaswag", "aqua_animal", "aqua"} <= set(manager.all_tasks)
    # What globs over our prefixes rely on: no built-in name starts so.
    ours = {path.stem for path in task_config_dir().rglob("*.yaml")}
    builtins = set(outside.all_tasks) - ours
    assert len(builtins) > 10_000
    assert not [name for name in builtins if name.lower().startswith(OWN_PREFIXES)]


@pytest.mark.slow
def test_a_caller_indexing_only_its_own_folders_is_left_so(task_manager_cls):
    with indexing_for(Namespace(tasks=["aqua_animal"])):
        own = task_manager_cls(include_path=str(task_config_dir()), include_defaults=False)
    assert "aqua_animal" in own.all_tasks and "arc_easy" not in own.all_tasks


def run(*args: object, env: dict | None = None) -> subprocess.CompletedProcess:
    full_env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    full_env.pop(ENV_SWITCH, None)
    full_env |= {"LMEVAL_LOG_LEVEL": "DEBUG", **(env or {})}
    return subprocess.run(
        [str(a) for a in args], capture_output=True, text=True, timeout=600, env=full_env
    )


def indexed_folders(proc: subprocess.CompletedProcess) -> list[list[str]]:
    """The folders of each task index lm-eval built (its DEBUG line), in order."""
    return [re.findall(r"Path\('([^']*)'\)", m) for m in INDEX_LINE.findall(proc.stderr)]


@pytest.fixture(scope="module")
def user_tasks(tmp_path_factory) -> Path:
    """A user's folder with one task of their own."""
    root = tmp_path_factory.mktemp("user_tasks")
    data = root / "qa.jsonl"
    rows = [{"q": f"question {i}", "answer": "lol"} for i in range(3)]
    data.write_text("".join(json.dumps(row) + "\n" for row in rows))
    (root / "my_qa.yaml").write_text(USER_TASK.format(data=data))
    return root


@pytest.mark.slow
def test_aqua_only_runs_of_aqua_eval_index_only_our_folders(user_tasks, released_dir, tmp_path):
    args = [
        "--model", "dummy", "--tasks", "aqua_animal,my_qa", "--include_path", user_tasks,
        "--limit", LIMIT,
        "--metadata", json.dumps({"data_dir": str(released_dir), "audio": False}),
    ]  # fmt: skip
    commands = {
        "lm_eval": ([BIN / "lm_eval", *args], {}),
        "aqua eval": ([BIN / "aqua", "eval", *args], {}),
        "aqua eval, hook off": ([BIN / "aqua", "eval", *args], {ENV_SWITCH: "0"}),
    }
    with ThreadPoolExecutor(len(commands)) as pool:
        futures = {
            name: pool.submit(run, *cmd, "--output_path", tmp_path / name, env=env)
            for name, (cmd, env) in commands.items()
        }
        procs = {name: future.result() for name, future in futures.items()}
    ours = str(task_config_dir())
    for name, proc in procs.items():
        assert proc.returncode == 0, (name, proc.stderr[-4000:])
        if name == "lm_eval":  # lm-eval's command line is not ours: its full index
            (folders,) = indexed_folders(proc)
            assert {ours, str(user_tasks)} < set(folders)
        else:
            assert indexed_folders(proc) == [[ours, str(user_tasks)]], name
        (results,) = (tmp_path / name).rglob("results_*.json")
        assert set(json.loads(results.read_text())["results"]) == {"aqua_animal", "my_qa"}


@pytest.mark.slow
def test_lm_eval_ls_tasks_still_lists_the_builtin_tasks_and_ours():
    proc = run(BIN / "lm_eval", "ls", "tasks", env={"LMEVAL_LOG_LEVEL": "WARNING"})
    assert proc.returncode == 0, proc.stderr[-4000:]
    listed = set(re.findall(r"^\|\s*([\w.-]+)\s*\|", proc.stdout, re.M))
    assert {"arc_easy", "hellaswag", "aqua_animal", "aqua"} <= listed
