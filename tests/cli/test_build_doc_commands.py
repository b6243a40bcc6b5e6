"""Every shell command of docs/build.md runs as written, unless it needs a GPU or a download.

The commands are read from the page's ```bash blocks as the README test reads the README's
(`test_readme_commands.readme_commands`), and run in one scratch folder, in page order: the
`git clone`s are stood in for by the files they fetch (the real MMAU test-mini, an MMAR-style
meta file), the OpenAI endpoints by the local chat stand-in, `/path/to/chat-model` and
`/path/to/model` by tiny models built offline, the audio by the real MMAU clip and
synthesized tones. Each skipped command is listed in SKIPPED with the reason.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from mmau_fixtures import MMAU_DEMO_CLIP, MMAU_DEMO_ID, MMAU_TEST_MINI, NEEDS_MMAU_DATA
from shared_cache import shared_artefact
from support.chat_stub import StubConfig, start_stub, stub_url
from support.tiny_audio_lm import build_tiny_audio_lm, build_tiny_chat_lm
from test_readme_commands import readme_commands, run_entry_point, run_shell

from aqua_tasks.build.source import read_source

pytestmark = [pytest.mark.slow, NEEDS_MMAU_DATA]
REPO = Path(__file__).resolve().parents[2]
MMAU = MMAU_TEST_MINI
DEMO_ID = MMAU_DEMO_ID
DEMO_CLIP = MMAU_DEMO_CLIP
# Items built by the commands that ask a model (the page builds all 1000 of test-mini).
LLM_LIMIT = {"openai": 12, "hf": 3}
SKIPPED = {
    "git clone https://github.com/Sakshi113/MMAU mmau-repo": "a download (stood in for here)",
    "vllm serve Qwen/Qwen2.5-7B-Instruct --port 8000": "needs a GPU and the model's weights",
    'AQUA_METADATA=\'{"data_dir": "aqua-mmau/", "mmau_audio_root": "mmau-audio/"}\' lmms-eval '
    '--include_path "$(python -m eval_plugins.lmms_eval --include-path)" --model aqua-audiolm '
    "--model_args pretrained=/path/to/model --tasks aqua_mmau --log_samples --output_path "
    "runs/mmau-lmms-eval": (
        "runs in the lmms-eval environment: tests_lmms/test_lmms_mmau.py runs aqua_mmau there"
    ),
    "aqua score runs/mmau-lmms-eval --data-dir aqua-mmau/": (
        "reads the lmms-eval run above (tests_lmms/test_lmms_logs_live.py scores lmms-eval "
        "logs with --data-dir)"
    ),
    "git clone https://github.com/ddlBoJack/MMAR mmar-repo": "a download (stood in for here)",
}
GOOD = {
    "question": "Based on the given audio, what is the serial number of the recorder?",
    "options": ["SN-1041", "SN-2203", "SN-3377", "SN-4519"],
    "attribute": "serial number",
}
# MMAR-meta.json's layout: a JSON list of items, audio paths relative to the audio folder.
MMAR_ITEMS = [
    {
        "id": f"mmar-{i}",
        "audio_path": f"./audio/mmar-{i}.wav",
        "question": "Which instrument is playing the melody?",
        "choices": ["Violin", "Flute", "Drum", "Trumpet"],
        "answer": ["Violin", "Flute", "Drum", "Trumpet"][i],
        "modality": "music",
        "category": "Perception",
        "sub-category": "Instrument",
        "language": "None",
    }
    for i in range(4)
]


def _tone(path: Path, seed: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    rate = (16000, 22050, 44100)[seed % 3]
    t = np.arange(int(0.1 * rate)) / rate
    sf.write(path, (0.2 * np.sin(2 * np.pi * (200 + 100 * seed) * t)).astype(np.float32), rate)


def concrete(command: str, url: str, chat_model: Path, audio_model: Path) -> str:
    """The page's command with this scratch run's values (and small limits) in place."""
    command = re.sub(r"--base-url \S+", f"--base-url {url}", command)
    command = command.replace("/path/to/chat-model", str(chat_model))
    command = command.replace("/path/to/model", str(audio_model))
    if "--iaqd openai" in command:
        command += f" --limit {LLM_LIMIT['openai']}"
    if "--iaqd hf" in command:
        command += f" --limit {LLM_LIMIT['hf']} --max-attempts 1 --max-tokens 8"
    if command.startswith("aqua eval"):
        command += " --gen_kwargs max_gen_toks=4"  # the tiny model's replies are noise
    return command


@pytest.fixture(scope="module")
def ran(tmp_path_factory, monkeypatch_module) -> dict[str, dict]:
    """Every command of the page not in SKIPPED, run in one scratch folder, in page order."""
    work = tmp_path_factory.mktemp("build-doc")
    monkeypatch_module.setenv("AQUA_CACHE_DIR", str(work / "cache"))
    monkeypatch_module.setenv("OPENAI_API_KEY", "sk-test")
    (work / "mmau-repo").mkdir()
    shutil.copy(MMAU, work / "mmau-repo")
    (work / "mmar-repo").mkdir()
    (work / "mmar-repo" / "MMAR-meta.json").write_text(json.dumps(MMAR_ITEMS))
    for n, item in enumerate(read_source(MMAU)[: LLM_LIMIT["hf"]]):  # the last MMAU build
        clip = work / "mmau-audio" / item.audio
        if item.id == DEMO_ID:
            clip.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(DEMO_CLIP, clip)
        else:
            _tone(clip, n)
    for n, item in enumerate(MMAR_ITEMS):
        _tone(work / "mmar-audio" / item["audio_path"], n)
    chat_model = shared_artefact("tiny-chat", build_tiny_chat_lm)
    audio_model = shared_artefact("tiny-audio-lm", build_tiny_audio_lm)
    server, _ = start_stub(StubConfig(require_audio=False, reply=lambda r: json.dumps(GOOD)))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    results = {}
    try:
        for command in readme_commands((REPO / "docs" / "build.md").read_text()):
            if command in SKIPPED:
                continue
            run = concrete(command, stub_url(server), chat_model, audio_model)
            if command.startswith("cp "):
                results[command] = run_shell(run, work, env)
            else:
                results[command] = run_entry_point(run, work)
            results[command]["work"] = work
    finally:
        server.shutdown()
    return results


@pytest.fixture(scope="module")
def monkeypatch_module():
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("NO_PROXY", "127.0.0.1,localhost")
        patch.setenv("no_proxy", "127.0.0.1,localhost")
        yield patch


def test_every_command_of_the_page_runs_or_is_skipped_with_its_reason(ran):
    commands = readme_commands((REPO / "docs" / "build.md").read_text())
    assert set(SKIPPED) <= set(commands)  # no stale entry
    assert set(ran) == set(commands) - set(SKIPPED)
    failed = {c: (r["status"], r["err"][-1500:]) for c, r in ran.items() if r["status"] != 0}
    assert failed == {}


def _manifest(work: Path, folder: str) -> dict:
    return json.loads((work / folder / "build-manifest_AQUA-Bench-MMAU-Track.json").read_text())


def test_the_build_prints_the_line_the_page_quotes(ran):
    (template,) = [
        r for c, r in ran.items() if c.startswith("aqua build --source mmau --input mmau-test")
    ]
    page = (REPO / "docs" / "build.md").read_text()
    quoted = re.search(r"prints one line:\n\s*`([^`]+)`", page).group(1)
    assert quoted in template["out"]
    assert quoted == (
        "991 clips (3964 questions) from 1000 items; skipped: 8 answer_is_rejection, "
        "1 question_in_choices"
    )


def test_model_written_builds_count_what_the_model_wrote(ran):
    work = next(iter(ran.values()))["work"]
    # The last MMAU build of the page is the local chat model's: random weights, no valid reply.
    manifest = _manifest(work, "aqua-mmau")
    assert manifest["generator"]["name"] == "hf"
    assert manifest["iaqd"]["fallback_to_template"] == LLM_LIMIT["hf"]
    openai_runs = [r for c, r in ran.items() if "--iaqd openai" in c]
    assert len(openai_runs) == 2 and all("12 clips (48 questions)" in r["out"] for r in openai_runs)


def test_audio_check_finds_every_clip_and_the_runs_score_every_item(ran):
    checks = [r["out"] for c, r in ran.items() if c.startswith("aqua audio check")]
    assert checks[0].startswith("mmau: 3 referenced, 3 found, 0 missing")
    assert checks[1].startswith("mmau: 4 referenced, 4 found, 0 missing")
    work = next(iter(ran.values()))["work"]
    for folder, items in (("runs/mmau-lm-eval", 12), ("runs/mmar", 16)):
        results = json.loads(max((work / folder).rglob("results_*.json")).read_text())
        assert results["results"]["aqua_mmau"]["n_items,none"] == items
    table = (work / "report" / "table.md").read_text()
    assert "| MMAU Ori |" in table and "(published)" in table
    mmar = _manifest(work, "aqua-mmar")
    assert mmar["counts"]["built_clips"] == 4 and mmar["source"]["file"] == "MMAR-meta.json"
