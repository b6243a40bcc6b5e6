"""A user task YAML lm-eval would skip unread is refused in one line naming file, line and rule."""

from __future__ import annotations

import pytest

from aqua_tasks.errors import AquaDataError
from eval_plugins.cli import aqua_eval as cli_eval
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.lm_eval.aqua.user_tasks import check_user_task_yamls

ALLOWED = "plain YAML only (mappings, lists, strings, numbers, true/false, null) and !function"


def test_our_own_task_yamls_with_their_function_tags_pass():
    assert check_user_task_yamls(str(task_config_dir())) > 10


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            'task: mine\nprocess_docs: !!python/object/apply:os.system ["true"]\n',
            f":2: !!python/object/apply:os.system is not allowed: {ALLOWED}",
        ),
        ("task: mine\n  dataset_path: json\n", ":2:15: YAML syntax error"),
        (b"task: mine\ndescription: caf\xe9\n", ":2: byte 0xe9 at column 17 is not UTF-8"),
    ],
)
def test_a_broken_user_task_yaml_names_file_line_and_what_is_allowed(tmp_path, text, expected):
    path = tmp_path / "tasks" / "nested" / "mine.yaml"
    path.parent.mkdir(parents=True)
    path.write_bytes(text if isinstance(text, bytes) else text.encode())
    (tmp_path / "tasks" / "fine.yaml").write_text(
        "task: fine\nprocess_results: !function utils.process_results\n", encoding="utf-8"
    )
    with pytest.raises(AquaDataError) as error:
        check_user_task_yamls(str(tmp_path / "tasks"))
    assert str(error.value).startswith(f"{path}{expected}")
    assert str(error.value).endswith(
        "(lm-eval would skip this task file and call its tasks not found)"
    )


def test_aqua_eval_refuses_it_before_lm_eval_indexes_any_task(tmp_path, capsys):
    (tmp_path / "mine.yaml").write_text("task: mine\ninclude: !!python/name:os.system\n")
    argv = ["--model", "aqua-random", "--tasks", "mine", "--include_path", str(tmp_path)]
    assert cli_eval.main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1] == (
        f"aqua eval: error: {tmp_path / 'mine.yaml'}:2: !!python/name:os.system is not allowed: "
        f"{ALLOWED} (lm-eval would skip this task file and call its tasks not found)"
    )
