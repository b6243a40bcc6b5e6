"""`aqua-audiolm` with a tiny random Qwen2-Audio: real architecture, processor and audio path."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
from launchers import CPU_ENV, accelerate_two_processes
from lm_eval.api.instance import Instance
from support.tiny_audio_lm import build_tiny_audio_lm

from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.core.data import load_items
from aqua_tasks.core.docs import doc_to_item
from aqua_tasks.core.generation_failure import failed_reply
from aqua_tasks.core.scoring import ALL_METRICS, score_reply
from aqua_tasks.errors import AudioFileError, ClipCheckError
from aqua_tasks.models.audio_prompts import chat_content, cut_at_stop, mono_waveform
from aqua_tasks.models.data_parallel import parse_max_memory
from aqua_tasks.models.hf_audio_lm import AudioLM
from aqua_tasks.models.hf_audio_lm_loading import model_revision
from aqua_tasks.models.reply_journal import ReplyJournal
from aqua_tasks.task.definition import build_docs, doc_to_audio, doc_to_text

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TASK_GEN_KWARGS = {"until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}
# The clips the authors published, by task (ends of the released audio_filename).
REAL = {
    "aqua_animal": "4-181955-C-3.wav",
    "aqua_music": "Acoustic_Guitar/2940.wav",
    "aqua_vocal": "m1553_0_cough.wav",
}


@pytest.fixture(scope="module", autouse=True)
def journal_home(tmp_path_factory):
    """Reply journals of models built with the default reply_cache go here, not to ~/.cache."""
    previous = os.environ.get("AQUA_CACHE_DIR")
    os.environ["AQUA_CACHE_DIR"] = str(tmp_path_factory.mktemp("aqua_cache"))
    yield
    if previous is None:
        del os.environ["AQUA_CACHE_DIR"]
    else:
        os.environ["AQUA_CACHE_DIR"] = previous


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    return build_tiny_audio_lm(tmp_path_factory.mktemp("tiny_qwen2_audio"))


@pytest.fixture(scope="module")
def lm(tiny_dir) -> AudioLM:
    # No reply journal: these tests compare fresh generations with each other.
    return AudioLM(pretrained=str(tiny_dir), device="cpu", max_gen_toks=6, reply_cache="off")


def real_sample_ids(released_dir: Path) -> dict[str, list[int]]:
    """The first two items (Solvable first) of each track's real clip."""
    ids = {}
    for task, suffix in REAL.items():
        items = load_items(released_dir, task.removeprefix("aqua_"))
        ids[task] = [n for n, i in enumerate(items) if i.audio_filename.endswith(suffix)][:2]
    return ids


@pytest.fixture(scope="module")
def requests(released_dir, released_audio_root) -> list[Instance]:
    """Requests as lm-eval builds them: real clips and stand-ins at 16-44.1 kHz."""
    settings = {"audio_root": str(released_audio_root)}
    chosen = []
    for task, ids in real_sample_ids(released_dir).items():
        docs = build_docs(task.removeprefix("aqua_"), data_dir=str(released_dir), settings=settings)
        # Real clips (seconds long) and stand-ins (0.1 s) give prompts of different lengths.
        chosen += [(task, n, docs[n]) for n in [*ids, 8]]
    return [
        Instance(
            request_type="generate_until",
            doc=doc,
            arguments=(doc_to_text(doc), dict(TASK_GEN_KWARGS), {"audio": doc_to_audio(doc)}),
            idx=0,
            metadata=(task, n, 1),
        )
        for task, n, doc in chosen
    ]


@pytest.fixture(scope="module")
def one_at_a_time(lm, requests) -> list[str]:
    """Every request's reply generated alone: the reference the other runs must equal."""
    lm.batch_size = 1
    return lm.generate_until(requests, disable_tqdm=True)


def test_batched_greedy_replies_equal_one_at_a_time_in_request_order(lm, requests, one_at_a_time):
    single = one_at_a_time
    lm.batch_size = 4
    batched = lm.generate_until(requests, disable_tqdm=True)
    assert batched == single
    assert all(isinstance(r, str) for r in single) and len(single) == len(requests)
    # Noise, but not one constant string: replies depend on each request's audio and prompt.
    assert len(set(single)) > 1


def test_audio_tokens_follow_each_clips_length_after_resampling(lm, requests):
    # Real animal and music clips; stand-ins written at other rates.
    chosen = [requests[0], requests[2], requests[4], requests[-1]]
    clips = [r.args[2]["audio"] for r in chosen]
    prompts = [lm.prompt(r.args[0], 1) for r in chosen]
    inputs = lm.encode(prompts, clips)
    for row, (audio,) in zip(inputs["input_ids"], clips, strict=True):
        info = sf.info(audio.path)
        samples_16k = round(info.frames * 16000 / info.samplerate)
        frames = -(-samples_16k // 160)  # 10 ms mel frames
        # Two stride-2 reductions in the encoder: about 25 audio tokens per second.
        expected = ((frames - 1) // 2 + 1 - 2) // 2 + 1
        assert int((row == lm.model.config.audio_token_id).sum()) == expected
    assert inputs["input_features"].shape == (4, 128, 3000)
    # Left padding: every row ends with the assistant turn's prompt, never with padding.
    assert (inputs["attention_mask"][:, -1] == 1).all()


def test_real_five_second_clip_becomes_125_audio_tokens(lm, demo_audio_dir):
    clip = LazyAudio(demo_audio_dir / REAL["aqua_animal"])
    inputs = lm.encode([lm.prompt("<audio>\nWhat is it?", 1)], [[clip]])
    assert sf.info(clip.path).duration == pytest.approx(5.0)
    assert int((inputs["input_ids"] == lm.model.config.audio_token_id).sum()) == 125


def test_audio_at_another_rate_is_resampled_to_the_processors_rate():
    tone = np.sin(np.arange(44100) / 10).astype(np.float32)
    wave = mono_waveform({"array": tone, "sampling_rate": 44100}, 16000)
    assert wave.dtype == np.float32 and wave.shape == (16000,)
    with pytest.raises(ValueError, match="mono"):
        mono_waveform({"array": np.zeros((2, 100)), "sampling_rate": 16000}, 16000)


def test_stop_strings_cut_replies_at_the_earliest_occurrence(lm, requests):
    assert cut_at_stop("The answer is (b). Because", [".", "answer"]) == "The "
    assert cut_at_stop("no stop here", []) == "no stop here"
    assert cut_at_stop("kept whole", ["absent", ""]) == "kept whole"
    request = requests[0]
    (full,) = lm.generate_until([request], disable_tqdm=True)
    stop = next(c for c in full[1:] if c.isascii() and not c.isspace())
    stopped = Instance(
        request_type="generate_until",
        doc=request.doc,
        arguments=(request.args[0], {**TASK_GEN_KWARGS, "until": [stop]}, request.args[2]),
        idx=0,
        metadata=(request.task_name, request.doc_id, 1),
    )
    (cut,) = lm.generate_until([stopped], disable_tqdm=True)
    assert cut == full[: full.index(stop, 1)]


def test_chat_template_is_applied_once_whoever_applies_it(lm):
    plain = lm.prompt("<audio>\nWhich animal?", 1)
    assert plain.count("<|audio_bos|><|AUDIO|><|audio_eos|>") == 1
    assert plain.endswith("Which animal?<|im_end|>\n<|im_start|>assistant\n")
    # lm-eval --apply_chat_template calls our apply_chat_template, then sends its output.
    templated = lm.apply_chat_template([{"role": "user", "content": "<audio>\nWhich animal?"}])
    assert templated == plain and lm.prompt(templated, 1) == plain
    assert chat_content("<audio>\nQ") == [{"type": "audio"}, {"type": "text", "text": "Q"}]
    with pytest.raises(ValueError, match="2 clips"):
        lm.prompt("<audio>\nOne slot", 2)


def test_system_prompt_replaces_the_templates_default(tiny_dir):
    lm = AudioLM(pretrained=str(tiny_dir), device="cpu", system_prompt="Answer with a letter.")
    assert lm.prompt("<audio>\nQ", 1).startswith("<|im_start|>system\nAnswer with a letter.")


def test_bad_requests_and_models_fail_with_a_reason(lm, tiny_dir, tmp_path):
    text_only = Instance("generate_until", {}, ("Q", {}), 0, ("aqua_animal", 3, 1))
    with pytest.raises(ValueError, match="doc 3: request carries no audio"):
        lm.generate_until([text_only])
    with pytest.raises(NotImplementedError, match="only generate_until"):
        lm.loglikelihood([text_only])
    from transformers import AutoTokenizer

    # A text-only checkpoint: its "processor" is just the tokenizer.
    AutoTokenizer.from_pretrained(tiny_dir).save_pretrained(tmp_path)
    config = json.loads((tmp_path / "tokenizer_config.json").read_text())
    del config["processor_class"]
    (tmp_path / "tokenizer_config.json").write_text(json.dumps(config))
    with pytest.raises(ValueError, match="no audio feature extractor"):
        AudioLM(pretrained=str(tmp_path), device="cpu")
    with pytest.raises(ValueError, match="dtype='fp8'"):
        AudioLM(pretrained=str(tiny_dir), dtype="fp8")
    with pytest.raises(ValueError, match="batch_size='auto'"):
        AudioLM(pretrained=str(tiny_dir), batch_size="auto")


def test_model_args_win_over_the_cli_defaults_lm_eval_always_sends(tiny_dir):
    lm = AudioLM.create_from_arg_string(
        f"pretrained={tiny_dir},batch_size=3,dtype=float32",
        {"batch_size": 1, "max_batch_size": None, "device": "cpu"},
    )
    assert lm.batch_size == 3 and str(lm.device) == "cpu"


def eval_command(tiny_dir: Path, samples: dict, metadata: dict, out: Path) -> list[str]:
    """The aqua eval arguments every end-to-end run here shares."""
    return [
        str(BIN / "aqua"),
        "eval",
        "--model",
        "hf-audiolm-qwen",
        "--model_args",
        f"pretrained={tiny_dir},batch_size=2,max_gen_toks=8,device=cpu",
        "--tasks",
        ",".join(samples),
        "--samples",
        json.dumps(samples),
        "--metadata",
        json.dumps(metadata),
        "--log_samples",
        "--output_path",
        str(out),
    ]


def run_env(cache_dir: Path) -> dict[str, str]:
    """Offline, with the reply journal under `cache_dir` (never the user's cache)."""
    return {
        **os.environ,
        "HF_HUB_OFFLINE": "1",
        "HF_DATASETS_OFFLINE": "1",
        "AQUA_CACHE_DIR": str(cache_dir),
    }


def logged_replies(out: Path, tasks) -> dict[tuple[str, int], str]:
    """Per-item replies of a --log_samples run, by task and doc id."""
    replies = {}
    for task in tasks:
        log = next(out.rglob(f"samples_{task}_*.jsonl")).read_text()
        for line in log.splitlines():
            sample = json.loads(line)
            (reply,) = sample["resps"][0]
            replies[(task, sample["doc_id"])] = reply
    return replies


def task_metrics(results: dict) -> dict:
    """Every task's metric values (the part of the results two runs must share)."""
    return {
        task: {k: v for k, v in row.items() if "," in k} for task, row in results["results"].items()
    }


@pytest.fixture(scope="module")
def single_process_run(tmp_path_factory, tiny_dir, released_dir, released_audio_root):
    """One aqua eval run in one process (with lm-eval's --use_cache): the reference run."""
    out = tmp_path_factory.mktemp("one_process")
    samples = real_sample_ids(released_dir)
    samples["aqua_animal"] = sorted({*samples["aqua_animal"], 8, 9, 10, 11})
    metadata = {"data_dir": str(released_dir), "audio_root": str(released_audio_root)}
    command = eval_command(tiny_dir, samples, metadata, out / "results")
    proc = subprocess.run(
        [*command, "--use_cache", str(out / "lm_cache" / "run")],
        capture_output=True,
        text=True,
        timeout=600,
        env=run_env(out / "journal"),
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return {
        "out": out,
        "proc": proc,
        "samples": samples,
        "metadata": metadata,
        "results": json.loads(sorted(out.rglob("results_*.json"))[-1].read_text()),
    }


def test_hf_audiolm_qwen_runs_our_model_end_to_end_through_aqua_eval(single_process_run):
    proc, samples, results = (single_process_run[k] for k in ("proc", "samples", "results"))
    out = single_process_run["out"]
    notices = [line for line in proc.stderr.splitlines() if "runs aqua-audiolm" in line]
    assert len(notices) == 1 and "hf-audiolm-qwen is broken" in notices[0]
    assert results["config"]["model"] == "aqua-audiolm"
    for task, ids in samples.items():
        metrics = {k.split(",")[0] for k in results["results"][task] if "," in k}
        assert set(ALL_METRICS) <= metrics
        assert results["results"][task]["n_items,none"] == len(ids)
    replies = logged_replies(out, samples)
    assert sorted(replies) == sorted((t, i) for t, ids in samples.items() for i in ids)
    assert all(isinstance(r, str) for r in replies.values())
    assert "AQUA-Bench (paper layout, %)" in proc.stdout
    # The run's record: model, devices, throughput and memory in the results, not per doc.
    record = results["config"]["aqua_audiolm"]
    n = sum(len(ids) for ids in samples.values())
    assert record["model_revision"] == str(Path(results["config"]["model_args"]["pretrained"]))
    assert record["devices"] == ["cpu"] and record["dtype"] == "float32"
    assert (record["items"], record["generated"], record["reused"], record["failed"]) == (
        n,
        n,
        0,
        0,
    )
    assert record["items_per_second"] > 0 and record["peak_memory_mb"][0]["cpu_rss"] > 100
    for task in samples:
        manifest = results["configs"][task]["metadata"]["aqua_manifest"]
        assert not {"items_per_second", "peak_memory_mb", "model_revision"} & set(manifest)
    # lm-eval's --use_cache works with audio requests: every reply is in its store.
    from sqlitedict import SqliteDict

    with SqliteDict(str(out / "lm_cache" / "run_rank0.db")) as store:
        assert sorted(store.values()) == sorted(replies.values())
    # The reply journal holds each reply too (one line per request).
    (journal,) = (out / "journal").rglob("replies-rank0.jsonl")
    assert len(journal.read_text().splitlines()) == n


def test_two_data_parallel_processes_give_the_same_replies_and_metrics_as_one(
    single_process_run, tiny_dir, tmp_path
):
    samples, metadata = single_process_run["samples"], single_process_run["metadata"]
    command = eval_command(tiny_dir, samples, metadata, tmp_path / "results")
    launch = accelerate_two_processes(29500)
    env = {**run_env(tmp_path / "journal"), **CPU_ENV}
    proc = subprocess.run([*launch, *command], capture_output=True, text=True, timeout=600, env=env)
    assert proc.returncode == 0, proc.stderr[-4000:]
    (results_file,) = (tmp_path / "results").rglob("results_*.json")  # rank 0 writes alone
    results = json.loads(results_file.read_text())
    assert task_metrics(results) == task_metrics(single_process_run["results"])
    assert logged_replies(tmp_path / "results", samples) == logged_replies(
        single_process_run["out"], samples
    )
    record = results["config"]["aqua_audiolm"]
    n = sum(len(ids) for ids in samples.values())
    # lm-eval pads the smaller rank with a copy of its last request: items count them all.
    assert record["world_size"] == 2 and record["generated"] >= n and record["reused"] == 0
    assert len(record["peak_memory_mb"]) == 2
    # Each rank journals what it generated.
    assert len(list((tmp_path / "journal").rglob("replies-rank*.jsonl"))) == 2


def test_a_boolean_model_arg_that_is_not_a_boolean_is_refused_naming_it():
    with pytest.raises(ValueError, match="trust_remote_code='maybe': expected true/false"):
        AudioLM(pretrained="any-model", device="cpu", trust_remote_code="maybe")


def write_wave(path: Path, wave: np.ndarray, rate: int = 16000) -> LazyAudio:
    """A WAV file (float samples) wrapped as the lazily decoded audio tasks pass."""
    sf.write(path, wave.astype(np.float32), rate, subtype="FLOAT")
    return LazyAudio(path)


def audio_request(audio, n: int = 0, max_gen_toks: int = 4) -> Instance:
    """A generate_until request for one clip."""
    gen_kwargs = {"until": [], "max_gen_toks": max_gen_toks}
    return Instance(
        "generate_until", {}, ("<audio>\nQ?", gen_kwargs, {"audio": [audio]}), 0, ("t", n, 1)
    )


def test_bad_clips_are_refused_before_any_generation_naming_each_file(lm, tmp_path, monkeypatch):
    tone = 0.1 * np.sin(np.arange(16000) / 5)
    nan = tone.copy()
    nan[100] = np.nan
    clips = {
        "ok.wav": tone,
        "short_960.wav": tone[:960],  # crashes inside transformers when run
        "nan.wav": nan,
        "ok_961.wav": tone[:961],
    }
    requests = [
        audio_request(write_wave(tmp_path / n, w), i) for i, (n, w) in enumerate(clips.items())
    ]
    calls = []
    monkeypatch.setattr(lm.model, "generate", lambda **kw: calls.append(kw))
    with pytest.raises(ClipCheckError) as refused:
        lm.generate_until(requests, disable_tqdm=True)
    message = str(refused.value)
    # An AudioFileError: aqua eval reports it in one line, as it does a missing clip.
    assert isinstance(refused.value, AudioFileError)
    assert message.startswith("2 clip(s) cannot be run, nothing was generated")
    assert f"{tmp_path / 'short_960.wav'}: 60.0 ms long" in message and "60.1 ms" in message
    assert f"{tmp_path / 'nan.wav'}: holds NaN or infinite samples" in message
    assert "ok.wav" not in message and "ok_961.wav" not in message
    assert "aqua audio prepare" in message and calls == []
    stereo = {"array": np.zeros((2, 16000)), "sampling_rate": 16000}
    with pytest.raises(ClipCheckError, match=r"mono \(1-D\), got shape \(2, 16000\)"):
        lm.generate_until([audio_request(stereo)], disable_tqdm=True)


def test_silent_and_over_long_clips_run_and_are_counted(tiny_dir, tmp_path):
    lm = AudioLM(pretrained=str(tiny_dir), device="cpu", reply_cache="off")
    silent = write_wave(tmp_path / "silent.wav", np.zeros(8000))
    long = write_wave(tmp_path / "long.wav", 0.1 * np.sin(np.arange(31 * 8000) / 3), 8000)
    replies = lm.generate_until(
        [audio_request(silent, 0), audio_request(long, 1), audio_request(silent, 2)],
        disable_tqdm=True,
    )
    assert len(replies) == 3 and replies[0] == replies[2]
    record = lm.run_info
    assert (record["clips_checked"], record["clips_silent"], record["clips_over_window"]) == (
        2,
        1,
        1,
    )
    assert (record["items"], record["generated"], record["failed"]) == (3, 3, 0)


KILLED_AFTER_TWO_BATCHES = """
import os, signal, sys
from aqua_tasks.audio.clips import LazyAudio
from aqua_tasks.errors import AudioFileError
from aqua_tasks.models.hf_audio_lm import AudioLM
from lm_eval.api.instance import Instance

model, journal, *clips = sys.argv[1:]
lm = AudioLM(pretrained=model, device="cpu", max_gen_toks=6, batch_size=2, reply_cache=journal)
real, done = lm._generate, []

def generate(prompts, batch):
    if len(done) == 2:
        os.kill(os.getpid(), signal.SIGKILL)  # no clean-up of any kind
    done.append(1)
    return real(prompts, batch)

lm._generate = generate
requests = [
    Instance("generate_until", {}, ("<audio>\\nQ?", {"until": []}, {"audio": [LazyAudio(c)]}), 0,
             ("t", n, 1))
    for n, c in enumerate(clips)
]
lm.generate_until(requests, disable_tqdm=True)
"""


def test_a_killed_then_interrupted_run_continues_from_its_journal_like_an_uninterrupted_one(
    lm, tiny_dir, tmp_path, monkeypatch
):
    rng = np.random.default_rng(1)
    clips = []
    for n, rate in enumerate([16000, 22050, 44100, 16000, 32000, 16000, 22050]):
        wave = 0.2 * np.sin(np.arange(int(rate * (0.2 + 0.1 * n))) * rng.uniform(0.01, 0.2))
        clips.append(write_wave(tmp_path / f"clip{n}.wav", wave, rate))
    requests = [
        Instance(
            "generate_until", {}, ("<audio>\nQ?", {"until": []}, {"audio": [c]}), 0, ("t", n, 1)
        )
        for n, c in enumerate(clips)
    ]
    lm.batch_size = 2
    uninterrupted = lm.generate_until(requests, disable_tqdm=True)
    journal_dir = tmp_path / "journal"
    killed = subprocess.run(
        [sys.executable, "-c", KILLED_AFTER_TWO_BATCHES, str(tiny_dir), str(journal_dir)]
        + [c.path for c in clips],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert killed.returncode == -9, killed.stderr[-2000:]
    (journal,) = journal_dir.rglob("replies-rank0.jsonl")
    assert len(journal.read_text().splitlines()) == 4

    def model_with_journal(stop_after: int | None):
        again = AudioLM(
            pretrained=str(tiny_dir),
            device="cpu",
            max_gen_toks=6,
            batch_size=2,
            reply_cache=str(journal_dir),
        )
        real, generated = again._generate, []

        def generate(prompts, batch):
            if stop_after is not None and len(generated) >= stop_after:
                raise KeyboardInterrupt  # what Ctrl-C raises mid-run
            generated.extend(prompts)
            return real(prompts, batch)

        monkeypatch.setattr(again, "_generate", generate)
        return again, generated

    # The same command again: stopped by Ctrl-C after one more batch...
    second, generated = model_with_journal(stop_after=2)
    with pytest.raises(KeyboardInterrupt):
        second.generate_until(requests, disable_tqdm=True)
    assert len(generated) == 2
    # ...and once more: only the last request is generated; the replies are the same.
    third, generated = model_with_journal(stop_after=None)
    assert third.generate_until(requests, disable_tqdm=True) == uninterrupted
    assert len(generated) == 1
    assert (third.run_info["reused"], third.run_info["generated"]) == (6, 1)


def test_journal_ignores_a_line_cut_by_a_kill_and_appends_after_it(tmp_path):
    setting = {"model": "m"}
    journal = ReplyJournal(tmp_path, setting)
    journal.put([("a", "reply a")])
    with journal.path.open("a") as handle:
        handle.write('{"key": "b", "rep')  # SIGKILL in the middle of a write
    again = ReplyJournal(tmp_path, setting)
    assert again.replies == {"a": "reply a"} and again.torn == 1
    again.put([("c", "reply c")])
    assert ReplyJournal(tmp_path, setting).replies == {"a": "reply a", "c": "reply c"}
    # Another model setting never sees these replies.
    assert ReplyJournal(tmp_path, {"model": "other"}).replies == {}


def test_a_failing_item_gets_a_failed_reply_and_the_others_their_own(
    lm, requests, one_at_a_time, monkeypatch
):
    requests, reference = requests[:5], one_at_a_time[:5]
    lm.batch_size = 4
    real = lm.encode
    bad = lm.prompt(requests[3].args[0], 1)

    def encode(prompts, clips):
        if bad in prompts:
            raise ValueError("feature extractor rejected the clip")
        return real(prompts, clips)

    monkeypatch.setattr(lm, "encode", encode)
    replies = lm.generate_until(requests, disable_tqdm=True)
    assert replies[3] == failed_reply("ValueError: feature extractor rejected the clip")
    assert replies[:3] + replies[4:] == reference[:3] + reference[4:]
    assert lm.run_info["failed"] >= 1
    verdict = score_reply(doc_to_item(requests[3].doc), replies[3])
    assert not verdict.parsed and verdict.reason.startswith("error: ValueError")


def test_out_of_memory_halves_the_batch_and_the_replies_stay_the_same(
    lm, requests, one_at_a_time, monkeypatch
):
    import torch

    requests, reference = requests[:4], one_at_a_time[:4]
    lm.batch_size = 4
    real = lm._generate
    sizes = []

    def small_memory(prompts, batch):
        sizes.append(len(prompts))
        if len(prompts) > 1:
            raise torch.OutOfMemoryError("CUDA out of memory")
        return real(prompts, batch)

    monkeypatch.setattr(lm, "_generate", small_memory)
    assert lm.generate_until(requests, disable_tqdm=True) == reference
    assert sizes[:3] == [4, 2, 1]


def test_a_run_whose_first_items_all_fail_stops(lm, requests, monkeypatch):
    def broken(prompts, batch):
        raise RuntimeError("device-side assert")

    monkeypatch.setattr(lm, "_generate", broken)
    monkeypatch.setattr("aqua_tasks.models.hf_audio_lm.MAX_FAILURES", 3)
    with pytest.raises(RuntimeError, match="first 3 items all failed"):
        lm.generate_until(requests, disable_tqdm=True)


def test_lm_eval_use_cache_keys_audio_by_content_and_returns_stored_replies(
    lm, requests, tmp_path, monkeypatch
):
    from lm_eval.api.model import CachingLM, hash_args

    requests = requests[:3]
    lm.batch_size = 4
    cached = CachingLM(lm, str(tmp_path / "cache.db"))
    replies = cached.generate_until(requests)
    pairs = zip(requests, replies, strict=True)
    keys = {hash_args("generate_until", r.args): reply for r, reply in pairs}
    assert dict(cached.dbdict.items()) == keys
    # The same clip copied elsewhere gives the same key; other audio another.
    clip = requests[0].args[2]["audio"][0]
    copy = tmp_path / "copy.wav"
    copy.write_bytes(Path(clip.path).read_bytes())
    moved = (requests[0].args[0], requests[0].args[1], {"audio": [LazyAudio(copy)]})
    assert hash_args("generate_until", moved) in keys
    other = (requests[0].args[0], requests[0].args[1], requests[2].args[2])
    assert hash_args("generate_until", other) != hash_args("generate_until", requests[0].args)

    monkeypatch.setattr(lm, "_generate", lambda *a: pytest.fail("generated despite the cache"))
    again = CachingLM(lm, str(tmp_path / "cache.db"))
    assert again.generate_until(requests) == replies


def test_device_map_and_max_memory_reach_the_loader(tiny_dir, requests, monkeypatch):
    import transformers

    cls = transformers.Qwen2AudioForConditionalGeneration
    real = cls.from_pretrained.__func__
    seen = []

    def spy(klass, *args, **kwargs):
        seen.append({k: kwargs.get(k) for k in ("device_map", "max_memory")})
        return real(klass, *args, **kwargs)

    monkeypatch.setattr(cls, "from_pretrained", classmethod(spy))
    lm = AudioLM(
        pretrained=str(tiny_dir),
        device_map="auto",
        max_memory="cpu:2GiB",
        max_gen_toks=3,
        reply_cache="off",
    )
    # transformers turns "2GiB" into bytes in the very dict it was given.
    assert seen[0] == {"device_map": "auto", "max_memory": {"cpu": 2 * 2**30}}
    assert lm.run_info["devices"] == ["cpu"]
    assert len(lm.generate_until(requests[:2], disable_tqdm=True)) == 2
    assert parse_max_memory("0:20GiB;1:18GiB;cpu:64GiB") == {0: "20GiB", 1: "18GiB", "cpu": "64GiB"}
    with pytest.raises(ValueError, match="DEVICE:AMOUNT pairs joined by ';'"):
        parse_max_memory("20GiB")
    with pytest.raises(ValueError, match=r"max_memory=\.\.\. needs device_map"):
        AudioLM(pretrained=str(tiny_dir), max_memory="cpu:2GiB")


def test_revision_recorded_is_the_hub_commit_or_the_local_folder(tiny_dir, tmp_path):
    commit = "0123456789abcdef0123456789abcdef01234567"
    repo = tmp_path / "models--org--tiny-audio"
    snapshot = repo / "snapshots" / commit
    snapshot.mkdir(parents=True)
    (snapshot / "config.json").write_bytes((tiny_dir / "config.json").read_bytes())
    (repo / "refs").mkdir()
    (repo / "refs" / "main").write_text(commit)
    # A model fetched from the Hub earlier, read from the cache (offline).
    assert model_revision("org/tiny-audio", None, cache_dir=str(tmp_path)) == commit
    assert model_revision("org/tiny-audio", "main", cache_dir=str(tmp_path)) == commit
    assert model_revision(str(tiny_dir), None) == str(tiny_dir.resolve())
