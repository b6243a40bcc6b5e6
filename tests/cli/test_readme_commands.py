"""Every shell command in the README and the user guide runs as written, unless it needs a GPU
or a download.

Commands are read from the README's ```bash blocks (backslash continuations joined,
comments dropped, `[...]` optional parts of a usage line left out). Each one is either run
here or listed in SKIPPED with the reason, so a new README command is run by default and a
skipped one cannot go unnoticed. Placeholders get real values (PLACEHOLDERS); the README's
relative paths (OUT, out/, gen/, my_tasks/, items.jsonl, runs/…) live in one scratch folder.

lm-eval commands run through bash, concurrently (each is mostly lm-eval's start-up); AQUA
runs over the released questions get `--limit` so that each stays small. The other commands
are this package's console scripts: their entry points run in this process, in README order,
with the README's arguments (globs and environment variables expanded as bash would).
"""

from __future__ import annotations

import contextlib
import glob
import io
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib.metadata import entry_points
from pathlib import Path

import pytest
from orca_fixtures import synthetic_items, tiny_llama_dir, tiny_trained_checkpoint, write_jsonl
from shared_data import shared_data

pytestmark = pytest.mark.slow
REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# The packages whose console scripts a README command may run in this process.
PACKAGES = ("aqua_tasks", "orca_judge", "eval_plugins")
# Items per AQUA task in the README's lm-eval runs over the released questions.
AQUA_LIMIT = 4
SETUP_COMMANDS = [
    "python3 -m venv .venv && . .venv/bin/activate && pip install torch==2.13.0 -e '.[test]' "
    "-c constraints/main.txt && aqua demo",
    ".venv/bin/python -m pytest -q",
]
# A multiple-choice audio benchmark of a user's own, as JSONL with a `gold` answer field.
OTHER_BENCHMARK = [
    {
        "id": f"q{i}",
        "audio_id": f"clips/{i}.wav",
        "question": "Which instrument is playing?",
        "choices": ["Violin", "Flute", "Drum", "Trumpet"],
        "gold": ["Violin", "Flute", "Drum", "Trumpet"][i % 4],
    }
    for i in range(4)
]
SKIPPED = {
    SETUP_COMMANDS[0]: "installs from the package registry; .ci/run runs exactly this in CI",
    SETUP_COMMANDS[1]: "the test suite itself",
    "aqua build --source mmau --input mmau-test-mini.json --output aqua-mmau/ --iaqd openai "
    "--base-url http://localhost:8000/v1/chat/completions --model Qwen/Qwen2.5-7B-Instruct": (
        "needs a chat model behind an OpenAI-compatible server (tests/build/ drive the openai "
        "generator against the local stand-in server)"
    ),
    "aqua audio prepare --source esc50 --from ashraq/esc50 --audio-root AUDIO --data-dir DATA": (
        "downloads ESC-50 from the Hugging Face Hub"
    ),
    "aqua audio prepare --source vocalsound --from lmms-lab/vocalsound --audio-root AUDIO "
    "--data-dir DATA": "downloads VocalSound from the Hugging Face Hub",
    "aqua audio prepare --source music --from /path/to/music_dataset --audio-root AUDIO "
    "--data-dir DATA": "needs the Kaggle instrument-sounds set, a download",
    "lm_eval --model aqua-audiolm --model_args pretrained=Qwen/Qwen2-Audio-7B-Instruct,"
    "device=cuda,dtype=bfloat16,batch_size=8 --tasks 'aqua_*' --metadata "
    '\'{"data_dir": "DATA", "audio_root": "AUDIO"}\' '
    "--log_samples --output_path runs/qwen2-audio": (
        "needs a GPU and downloads Qwen2-Audio from the Hugging Face Hub"
    ),
    "orca fetch-ratings --output data/orca-human": (
        "downloads the human ratings from the Hugging Face Hub; "
        "tests/orca/test_orca_human_ratings.py runs it on a local copy"
    ),
    "orca train --train train.jsonl --dev dev.jsonl --backbone <HF id or local dir> "
    "--likelihood multinomial --output CKPT": (
        "trains 1000 steps by default (minutes); tests/orca/test_orca_train.py trains a tiny "
        "backbone"
    ),
}


def readme_commands(text: str) -> list[str]:
    """The shell commands of the README's bash blocks, one string each."""
    commands: list[str] = []
    for block in re.findall(r"```bash\n(.*?)```", text, flags=re.S):
        joined = re.sub(r"\\\n\s*", " ", block)
        for line in joined.splitlines():
            if line[:1].isspace() and line.strip().startswith("[") and commands:
                commands[-1] += " " + line.strip()  # the next line of a usage synopsis
                continue
            command = re.sub(r"\s+#.*$", "", line.strip())
            if command and not command.startswith("#"):
                commands.append(" ".join(command.split()))
    return commands


def runnable(command: str) -> str:
    """The command without the `[...]` optional parts of a usage synopsis."""
    return " ".join(re.sub(r"\[[^\]]*\]", " ", command).split())


class _ChatServer(BaseHTTPRequestHandler):
    """An OpenAI-compatible chat endpoint: rejects every AQUA item, rates every judged answer 4."""

    def do_POST(self):
        length = int(self.headers.get("Content-Length", 0))
        asked = self.rfile.read(length).decode()
        judged = "rating" in asked  # the prompted judge asks for a 1-5 rating
        content = '{"rating": 4, "reason": "close"}' if judged else "None of the above."
        message = {"role": "assistant", "content": content}
        payload = {"choices": [{"index": 0, "message": message, "finish_reason": "stop"}]}
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


MY_TASK = """\
task: my_task
dataset_path: json
dataset_kwargs:
  data_files:
    test: {data}
test_split: test
output_type: generate_until
doc_to_text: "Question: {{{{question}}}}\\nAnswer:"
doc_to_target: "{{{{reference}}}}"
generation_kwargs:
  until: ["\\n"]
  max_gen_toks: 8
metric_list:
  - metric: orca
    checkpoint: {checkpoint}
    ratings_field: ratings
metadata:
  version: 1.0
"""


def placeholders(released_dir: Path, audio_root: Path, url: str) -> dict[str, str]:
    """README placeholder -> the value it takes here (regular expressions, whole words)."""
    return {
        r"\bDATA\b": str(released_dir),
        r"\bAUDIO\b": str(audio_root),
        r"\bRESULTS\b": "OUT",
        r"\bCKPT\b": str(tiny_trained_checkpoint()),
        r"pretrained=MODEL\b": f"pretrained={tiny_llama_dir()}",
        r"<model>": "aqua-random",
        r"<args>": "seed=0",
        r"http://localhost:8000/v1/chat/completions": url,
    }


def concrete(command: str, values: dict[str, str]) -> str:
    for pattern, value in values.items():
        command = re.sub(pattern, lambda _m, v=value: v, command)
    if command.startswith("lm_eval") and ("'aqua_*'" in command or "'aqua-open_*'" in command):
        command += f" --limit {AQUA_LIMIT}"
    return command


def table_values(stdout: str) -> dict[tuple[str, str], float]:
    """(task, metric) -> value from lm-eval's printed results table."""
    values: dict[tuple[str, str], float] = {}
    task = ""
    for line in stdout.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) < 7 or not line.startswith("|"):
            continue
        # Subtasks of a group row print as " - aqua_animal".
        task = cells[0].lstrip("- ").strip() or task
        try:
            values[task, cells[4]] = float(cells[6])
        except ValueError:
            continue
    return values


def run_shell(command: str, cwd: Path, env: dict) -> dict:
    proc = subprocess.run(
        ["bash", "-c", command], cwd=cwd, env=env, capture_output=True, text=True, timeout=600
    )
    return {"status": proc.returncode, "out": proc.stdout, "err": proc.stderr}


def run_entry_point(command: str, cwd: Path) -> dict:
    """Run one of this package's console scripts in this process, as bash would call it."""
    words = shlex.split(os.path.expandvars(command))
    scripts = {ep.name: ep for ep in entry_points(group="console_scripts")}
    script = scripts.get(words[0])
    assert script is not None and script.value.split(".")[0] in PACKAGES, (
        f"README command {command!r}: not a console script of this package; run it through "
        "bash here or list it in SKIPPED with the reason"
    )
    args: list[str] = []
    for word in words[1:]:
        matches = sorted(glob.glob(word, root_dir=cwd)) if glob.has_magic(word) else []
        args.extend(matches or [word])
    out, err = io.StringIO(), io.StringIO()
    before = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                status = script.load()(args)
            except SystemExit as stop:
                status = stop.code if isinstance(stop.code, int) else 1
    finally:
        os.chdir(before)
    return {"status": status or 0, "out": out.getvalue(), "err": err.getvalue()}


# The README's front page, then the user guide it sends the rest to: one sequence of commands.
DOCUMENTS = ("README.md", "docs/guide.md")


@pytest.fixture(scope="module")
def readme() -> list[str]:
    text = "\n".join((REPO / name).read_text(encoding="utf-8") for name in DOCUMENTS)
    return list(dict.fromkeys(readme_commands(text)))  # a command the guide repeats runs once


@pytest.fixture(scope="module")
def ran(readme, released_dir, released_audio_root, tmp_path_factory) -> dict[str, dict]:
    """Every README command not in SKIPPED, run in one scratch folder."""
    mmau = shared_data("mmau") / "mmau-test-mini.json"
    work = tmp_path_factory.mktemp("readme")
    (work / "my_tasks").mkdir()
    rated = synthetic_items(4, 5, "mt")
    data = write_jsonl(work / "my_tasks" / "my_task.jsonl", rated)
    checkpoint = tiny_trained_checkpoint()
    (work / "my_tasks" / "my_task.yaml").write_text(
        MY_TASK.format(data=data, checkpoint=checkpoint)
    )
    write_jsonl(work / "items.jsonl", synthetic_items(6, 3, "it"))  # the user's own items
    # What the skipped `orca fetch-ratings --output data/orca-human` would write.
    shutil.copytree(shared_data("orca-human"), work / "data" / "orca-human")
    # aqua build's inputs: MMAU test-mini as downloaded, and another benchmark's JSONL.
    shutil.copy(mmau, work)
    write_jsonl(work / "other.jsonl", OTHER_BENCHMARK)
    server = ThreadingHTTPServer(("127.0.0.1", 0), _ChatServer)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{server.server_port}/v1/chat/completions"
    values = placeholders(released_dir, released_audio_root, url)
    env = {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}",
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "GITHUB_STEP_SUMMARY": str(work / "summary.md"),
    }
    env.pop("AQUA_LM_EVAL_HOOK", None)
    to_run = [c for c in readme if c not in SKIPPED]
    harness = [c for c in to_run if c.split()[0] in ("lm_eval", "aqua eval")]
    results: dict[str, dict] = {}
    # The server stays up for every command: the harness runs and the prompted judges of
    # `orca compare` / `orca llm-judge` both ask it.
    try:
        with ThreadPoolExecutor(len(harness)) as pool:
            futures = {c: pool.submit(run_shell, concrete(c, values), work, env) for c in harness}
            results.update({c: f.result() for c, f in futures.items()})
        # The README's report and gate commands read runs of their own: here, copies of the
        # README's AQUA run (OUT) and of its ORCA run (out/, docs rated by humans).
        copies = {"OUT": ("runs/modelA", "runs/modelB", "ci/aqua-baseline", "runs/candidate")}
        copies["out"] = ("runs/orca-human",)
        for source, targets in copies.items():
            for target in targets:
                if (work / source).is_dir():  # else its command failed, reported below
                    shutil.copytree(work / source, work / target)
        with pytest.MonkeyPatch.context() as patch:
            patch.setenv("GITHUB_STEP_SUMMARY", env["GITHUB_STEP_SUMMARY"])
            for command in to_run:
                if command not in harness:
                    results[command] = run_entry_point(runnable(concrete(command, values)), work)
    finally:
        server.shutdown()
        server.server_close()
    results["work"] = {"path": work}
    return results


def test_every_readme_command_is_run_or_skipped_with_a_reason(readme):
    assert readme[:2] == SETUP_COMMANDS  # the quick start's two set-up commands stay
    stale = sorted(set(SKIPPED) - set(readme))
    assert not stale, f"SKIPPED lists commands the README no longer has: {stale}"
    assert all(reason.strip() for reason in SKIPPED.values())
    assert len(readme) > len(SKIPPED)


def test_every_runnable_readme_command_succeeds(readme, ran):
    failed = {
        c: (r["status"], (r["err"] or r["out"])[-2000:])
        for c, r in ran.items()
        if c != "work" and r["status"] != 0
    }
    assert not failed, failed
    assert set(ran) - {"work"} == {c for c in readme if c not in SKIPPED}


def test_readme_runs_give_aqua_tables_orca_figures_and_reports(ran):
    work = ran["work"]["path"]
    headline = next(r for c, r in ran.items() if c.startswith("lm_eval --model <model>"))
    # lm-eval's own table, with the all-tracks row pooled over clips.
    assert "|aqua (animal+music+vocal pooled over clips)|" in headline["out"]
    (results,) = (work / "OUT").rglob("results_*.json")
    got = json.loads(results.read_text())["results"]
    assert {"aqua_animal", "aqua_music", "aqua_vocal"} <= set(got)
    assert got["aqua_animal"]["n_items,none"] == AQUA_LIMIT

    # The API run answers "None of the above." to every item, text-only.
    api = next(r for c, r in ran.items() if "local-chat-completions" in c)
    assert "text-only run" in api["err"]
    table = table_values(api["out"])
    for task in ("aqua_animal", "aqua_music", "aqua_vocal"):
        assert table[task, "n_items"] == AQUA_LIMIT and table[task, "unparsed_rate"] == 0.0
        assert table[task, "acc_aad"] == 1.0 and table[task, "acc_iasd"] == 1.0

    # Always abstaining, asked without options: wrong on every Solvable item, right on IAQD.
    (open_run,) = (work / "runs" / "open").rglob("results_*.json")
    open_rows = json.loads(open_run.read_text())["results"]
    for track in ("animal", "music", "vocal"):
        row = open_rows[f"aqua-open_{track}"]
        assert row["n_items,none"] == AQUA_LIMIT
        assert row["acc_rule,none"] == 0.0 and row["acc_iaqd_rule,none"] == 1.0

    (orca_run,) = (work / "out").rglob("results_*.json")
    figures = json.loads(orca_run.read_text())["results"]["my_task"]
    assert figures["orca_with_question,none"] == 1.0
    assert 0.0 <= figures["orca,none"] <= 1.0
    assert (work / "predictions.jsonl").is_file()
    assert (work / "report" / "table.md").is_file()
    assert (work / "summary.md").read_text().strip()
