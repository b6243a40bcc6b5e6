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
from lm_eval.api.instance import Instance

from aqua_tasks.audio import LazyAudio
from aqua_tasks.audio_lm import AudioLM, chat_content, cut_at_stop, mono_waveform
from aqua_tasks.data import load_items
from aqua_tasks.lm_eval_task import build_docs, doc_to_audio, doc_to_text
from aqua_tasks.scoring import ALL_METRICS
from aqua_tasks.tiny_audio_lm import build_tiny_audio_lm

pytestmark = pytest.mark.slow
BIN = Path(sys.executable).parent
TASK_GEN_KWARGS = {"until": [], "max_gen_toks": 1024, "do_sample": False, "temperature": 0.0}
# The clips the authors published, by task (ends of the released audio_filename).
REAL = {
    "aqua_animal": "4-181955-C-3.wav",
    "aqua_music": "Acoustic_Guitar/2940.wav",
    "aqua_vocal": "m1553_0_cough.wav",
}


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


def test_batched_greedy_replies_equal_one_at_a_time_in_request_order(lm, requests):
    lm.batch_size = 1
    single = lm.generate_until(requests, disable_tqdm=True)
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
    """The aqua-eval arguments every end-to-end run here shares."""
    return [
        str(BIN / "aqua-eval"),
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
    """One aqua-eval run in one process (with lm-eval's --use_cache): the reference run."""
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
    launch = [
        str(BIN / "accelerate"),
        "launch",
        "--multi_gpu",  # the multi-process launcher; ACCELERATE_USE_CPU makes it gloo on CPU
        "--num_processes",
        "2",
        "--num_machines",
        "1",
        "--mixed_precision",
        "no",
        "--dynamo_backend",
        "no",
        "--main_process_port",
        str(29500 + os.getpid() % 1000),
    ]
    env = {**run_env(tmp_path / "journal"), "ACCELERATE_USE_CPU": "1", "OMP_NUM_THREADS": "1"}
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
