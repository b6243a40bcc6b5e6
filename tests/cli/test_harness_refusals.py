"""What a user sees from the real `aqua eval` and `lm_eval` (start-up hook) commands for bad model
arguments and for lm-eval's own refusals: from `aqua eval` one `aqua eval: error:` line, exit
status 2, no traceback; plain `lm_eval` reports our errors as it reports its own (a traceback
whose last line is the same message), before the model loads."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from eval_plugins.startup_hook import ENV_SWITCH

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
URL = "http://localhost:9/v1/chat/completions"
HUB_ID = "Qwen/Qwen2-Audio-7B-Instruct"  # checked for its form only: nothing is downloaded
UNSAFE_TASK = """\
task: my_task
dataset_path: json
output_type: generate_until
doc_to_text: !!python/object/apply:os.system ["echo owned"]
"""


def _run(args: list[str]) -> subprocess.CompletedProcess:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}
    env.pop(ENV_SWITCH, None)  # the start-up hook as a user has it
    return subprocess.run(args, capture_output=True, text=True, timeout=600, env=env)


@pytest.fixture(scope="module")
def refusals(released_dir, tmp_path_factory) -> dict[str, subprocess.CompletedProcess]:
    """Each bad command, run once (in parallel), by name."""
    tmp = tmp_path_factory.mktemp("refusals")
    (tmp / "tasks").mkdir()
    (tmp / "tasks" / "my_task.yaml").write_text(UNSAFE_TASK)
    (first,) = json.loads((released_dir / "AQUA-Bench-Animal-Sounds-Track.json").read_text())[:1]
    saved = tmp / "AQUA-Bench-Animal-Sounds-Track.json"
    saved.write_text(json.dumps([{**first, "response": "(a)"}]))
    meta = json.dumps({"data_dir": str(released_dir), "audio": False})
    lm_eval = [str(BIN / "aqua"), "eval", "--tasks", "aqua_animal", "--limit", "2", "--metadata"]
    plain = [str(BIN / "lm_eval"), "--tasks", "aqua_animal", "--limit", "2", "--metadata"]
    aqua_eval = [str(BIN / "aqua"), "eval", "--limit", "2", "--metadata"]
    commands = {
        "pretrained": [*lm_eval, meta, "--model", "aqua-audiolm", "--model_args",
                       f"pretrained={tmp / 'no-such-model'}"],
        "num_concurrent": [*lm_eval, meta, "--model", "openai-audio-chat", "--model_args",
                           f"base_url={URL},model=m,num_concurrent=0"],
        "text_only_api": [*lm_eval, meta, "--model", "openai-audio-chat", "--model_args",
                          f"base_url={URL},model=m"],
        "text_only_audiolm": [*aqua_eval, meta, "--tasks", "aqua_animal", "--model",
                              "aqua-audiolm", "--model_args", f"pretrained={HUB_ID}"],
        "replay": [*lm_eval, meta, "--model", "aqua-replay", "--model_args", f"path={saved}",
                   "--output_path", str(tmp / "out")],
        "unsafe_yaml": [*lm_eval, meta, "--model", "aqua-random", "--tasks", "my_task",
                        "--include_path", str(tmp / "tasks")],
        "seed": [*aqua_eval, meta, "--tasks", "aqua_animal", "--model", "aqua-random",
                 "--model_args", "seed=abc"],
        "plain_text_only_api": [*plain, meta, "--model", "openai-audio-chat", "--model_args",
                                f"base_url={URL},model=m"],
        "unknown_task": [*aqua_eval, meta, "--tasks", "aqua_aminal", "--model", "aqua-random"],
        "aqua_eval_json": [*aqua_eval, "{'data_dir': 'x'}", "--tasks", "aqua_animal",
                           "--model", "aqua-random"],
    }  # fmt: skip
    with ThreadPoolExecutor(4) as pool:
        done = dict(zip(commands, pool.map(_run, commands.values()), strict=True))
    done["folder"] = tmp  # type: ignore[assignment]
    return done


def _line(done: subprocess.CompletedProcess, prog: str) -> str:
    """The one error line; the run exited 2 and printed no traceback."""
    assert done.returncode == 2, done.stderr[-3000:]
    assert "Traceback" not in done.stderr, done.stderr[-3000:]
    (line,) = [x for x in done.stderr.splitlines() if x.startswith(f"{prog}: error:")]
    return line.removeprefix(f"{prog}: error: ")


def test_a_missing_pretrained_folder_is_named_not_the_hubs_repo_id_rule(refusals):
    folder = refusals["folder"] / "no-such-model"
    assert _line(refusals["pretrained"], "aqua eval") == (
        f"pretrained={str(folder)!r}: no such folder; give an existing model folder (with "
        "config.json) or a Hub id such as Qwen/Qwen2-Audio-7B-Instruct"
    )


def test_api_and_baseline_model_args_name_argument_value_and_range(refusals):
    assert _line(refusals["num_concurrent"], "aqua eval") == (
        "num_concurrent=0: expected an integer >= 1"
    )
    assert _line(refusals["seed"], "aqua eval") == "seed='abc': expected an integer >= 0"


def test_a_model_that_needs_audio_refuses_a_text_only_run_before_any_request(refusals):
    # Port 9 (discard) never answers: the line comes from the start-up check, not a request.
    assert _line(refusals["text_only_api"], "aqua eval") == (
        'openai-audio-chat needs audio, but --metadata sets "audio": false (a text-only run): '
        'drop "audio": false to send the clips, or run text-only with lm-eval\'s '
        "local-chat-completions"
    )
    plain = refusals["plain_text_only_api"]
    assert plain.returncode == 1 and "Initializing openai-audio-chat" not in plain.stderr
    assert (
        plain.stderr.strip()
        .splitlines()[-1]
        .endswith(
            'openai-audio-chat needs audio, but --metadata sets "audio": false (a text-only run): '
            'drop "audio": false to send the clips, or run text-only with lm-eval\'s '
            "local-chat-completions"
        )
    )
    assert _line(refusals["text_only_audiolm"], "aqua eval") == (
        'aqua-audiolm needs audio, but --metadata sets "audio": false (a text-only run): '
        'drop "audio": false to send the clips, or run text-only with an `hf` model'
    )


def test_replay_of_a_shorter_run_names_the_missing_items(refusals):
    line = _line(refusals["replay"], "aqua eval")
    assert line.startswith("aqua-replay: path=") and "no saved reply for 1 of the 2" in line
    assert "aqua_animal id " in line and "the same --tasks and --limit" in line


def test_broken_metadata_json_to_aqua_eval_names_the_flag_and_the_place(refusals):
    assert _line(refusals["aqua_eval_json"], "aqua eval").startswith(
        "--metadata: invalid JSON \"{'data_dir': 'x'}\" (Expecting property name enclosed in "
        "double quotes at line 1 column 2); give a JSON object with double-quoted keys"
    )


def test_an_unknown_task_is_one_line_naming_it(refusals):
    assert _line(refusals["unknown_task"], "aqua eval") == (
        "task(s) not found: aqua_aminal; `lm_eval ls tasks` lists the task names (a user folder "
        "goes in --include_path)"
    )


def test_a_user_task_lm_eval_could_not_read_is_not_found_in_one_line(refusals):
    # lm-eval's indexer would skip a YAML with an unsafe tag (it never runs it) and call the
    # task not found; aqua eval reads the user's folder first and names file, line and tag.
    folder = refusals["folder"] / "tasks"
    assert _line(refusals["unsafe_yaml"], "aqua eval").startswith(
        f"{folder / 'my_task.yaml'}:4: !!python/object/apply:os.system is not allowed"
    )
