"""`aqua-audiolm`: an lm-eval model class for Hugging Face audio LMs, one class for every family.

Works with models whose processor takes `text=` plus `audio=` and expands one audio token
per clip (Qwen2-Audio, Audio Flamingo 3, Music Flamingo and kin: the checkpoint's own processor
and chat template, the model class its config declares), and with the Qwen Omni thinkers
(2.5 and 3) and Phi-4-multimodal, whose inputs are built from the checkpoint's parts
(families/parts.py: their processors need torchvision); families that fit neither are
refused before any weights load (docs/audio_lm.md has the table).
Generation only, greedy, batched. Its model arguments are checked in hf_audio_lm_settings.py,
loading is in hf_audio_lm_loading.py, batching in hf_audio_lm_batching.py and what a run
records in hf_audio_lm_record.py.
"""

from __future__ import annotations

import inspect
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from lm_eval.api.instance import Instance
from lm_eval.api.model import LM
from tqdm import tqdm

from aqua_tasks.audio.checks import ClipReport, check_clips
from aqua_tasks.core.generation_failure import failed_reply
from aqua_tasks.core.generation_limit import limited_reply
from aqua_tasks.models.audio_prompts import (
    AUDIO_PLACEHOLDER,
    cut_at_stop,
    mono_waveform,
    render_chat,
    request_clips,
)
from aqua_tasks.models.data_parallel import Collective, launched_processes
from aqua_tasks.models.hf_audio_lm_batching import (
    DEFAULT_MAX_GEN_TOKS,
    Job,
    batches,
    ignored_gen_kwargs,
    stop_strings,
)
from aqua_tasks.models.hf_audio_lm_loading import (
    clip_limits,
    eos_ids,
    load_model,
    load_processor,
    model_devices,
    model_revision,
    read_config,
)
from aqua_tasks.models.hf_audio_lm_record import (
    add_call,
    journal_setting,
    peak_memory_mb,
)
from aqua_tasks.models.hf_audio_lm_settings import AudioLMSettings
from aqua_tasks.models.model_args import (
    ArgsThroughArgObj,
    harness_settings,
    positive_int,
    refuse_unknown,
)
from aqua_tasks.models.reply_journal import ReplyJournal, request_key

if TYPE_CHECKING:
    import torch

logger = logging.getLogger(__name__)

# A run whose first items all fail is broken as a whole (wrong device, bad checkpoint):
# stop rather than record every item as a failure.
MAX_FAILURES = 10
CLIP_NOTES = {
    "silent": "are all zeros (silent; a failed conversion?)",
    "over_window": "are longer than the model's audio window; it hears only the start",
}


class AudioLM(ArgsThroughArgObj, LM):
    """Greedy generation with a Hugging Face audio LM and its processor.

    Not built on lm-eval's `HFLM`: it loads causal or seq2seq LMs and tokenizes text only, and
    its audio subclass `hf-audiolm-qwen` hard-codes Qwen2-Audio's tokens and CUDA (broken in
    lm-eval 0.4.13, docs/audio_lm.md); the processor's audio inputs, Omni's thinker, clips
    decoded lazily and checked before inference, the reply journal and per-item failures would
    replace its whole generation path, leaving its loglikelihood machinery, which a
    generation-only model never calls.
    """

    MULTIMODAL = True  # lm-eval refuses audio tasks for models without this flag
    # CLI-level settings lm-eval passes to every model (the CLI always sends batch_size=1).
    HARNESS_ARGS = ("batch_size", "max_batch_size", "device")
    # It needs audio: a text-only run is refused before it starts (refuse_text_only_run).
    AUDIO_MODEL = "aqua-audiolm"
    TEXT_ONLY_MODEL = "an `hf` model"

    def __init__(
        self,
        pretrained: str | None = None,
        device: str | None = "auto",
        dtype: str | None = "auto",
        batch_size: int | str = 1,
        max_batch_size: int | None = None,  # sent by lm-eval; no automatic batch size
        max_gen_toks: int | str | None = None,
        trust_remote_code: bool | str = False,
        system_prompt: str | None = None,
        revision: str | None = None,
        device_map: str | None = None,
        max_memory: str | None = None,
        reply_cache: str | None = "auto",
    ) -> None:
        super().__init__()
        self.settings = settings = AudioLMSettings.from_model_args(
            pretrained=pretrained,
            device=device,
            dtype=dtype,
            batch_size=batch_size,
            max_gen_toks=max_gen_toks,
            trust_remote_code=trust_remote_code,
            system_prompt=system_prompt,
            revision=revision,
            device_map=device_map,
            max_memory=max_memory,
            reply_cache=reply_cache,
        )
        self.pretrained = settings.pretrained
        self.batch_size = settings.batch_size  # tests and benchmarks change it between calls
        self.max_gen_toks = settings.max_gen_toks
        self.system_prompt = settings.system_prompt
        self.device_map = settings.device_map
        self._warned: set[tuple[str, ...]] = set()
        self._succeeded = False  # whether any generation of the current call worked
        self._place_process()

        # Read first: Omni and Phi-4 build their inputs from the checkpoint's parts.
        # An unreadable config is reported by load_model, after the processor.
        config = read_config(settings)
        self.processor: Any = load_processor(settings, config)
        self.audio_token = self.processor.audio_token
        self.tokenizer = self.processor.tokenizer
        self.tokenizer.padding_side = "left"  # generation continues from the right edge
        self.clip_limits = clip_limits(self.processor)
        self.sampling_rate = self.clip_limits.sampling_rate

        loaded, adapter = load_model(settings, config, self.dtype)
        # Omni models generate text with their "thinker" sub-model.
        model = getattr(loaded, "thinker", loaded)
        if self.device_map is None:
            model = model.to(self._device)
        else:
            self._device = model.device  # where inputs go: the first layers' device
        self.model = model.eval()
        self.eos_token_ids = eos_ids(self.pretrained, loaded, self.tokenizer)
        pad = self.tokenizer.pad_token_id
        self.pad_token_id = pad if pad is not None else self.eos_token_ids[0]
        self.revision = model_revision(self.pretrained, settings.revision)
        self.run_info: dict[str, Any] = {
            "model_revision": self.revision,
            "model_class": type(self.model).__name__,
            "adapter": adapter,
            "devices": model_devices(self.model, self._device),
            "dtype": str(self.dtype).removeprefix("torch."),
            "batch_size": self.batch_size,
            "world_size": self.world_size,
        }
        self.journal = self._open_journal()
        logger.info(
            "aqua-audiolm: %s (%s) on %s in %s, batch size %d%s",
            self.pretrained,
            type(self.model).__name__,
            ", ".join(self.run_info["devices"]),
            self.run_info["dtype"],
            self.batch_size,
            f", rank {self.rank} of {self.world_size}" if self.world_size > 1 else "",
        )

    def _place_process(self) -> None:
        """This process's device and dtype: its own device under `accelerate launch`."""
        from eval_common.devices import resolve_device, resolve_dtype

        self._collective: Collective | None = None
        if launched_processes() > 1:
            if self.device_map is not None:
                raise ValueError(
                    f"device_map={self.device_map} under `accelerate launch`: use either one "
                    "process per device (data parallel) or one process over all devices "
                    "(device_map=auto), not both"
                )
            self._collective = Collective()
            self._rank = self._collective.rank
            self._world_size = self._collective.world_size
            self._device = self._collective.device  # each rank its own device
        else:
            self._device = resolve_device("auto" if self.device_map else self.settings.device)
        self.dtype = resolve_dtype(self.settings.dtype, self._device)

    def _open_journal(self) -> ReplyJournal | None:
        folder = self.settings.journal_folder()
        if folder is None:
            return None
        setting = journal_setting(
            self.pretrained, self.revision, self.run_info["dtype"], self._device.type
        )
        return ReplyJournal(folder, setting, rank=self.rank)

    @classmethod
    def create_from_arg_obj(cls, arg_dict: dict, additional_config: dict | None = None):
        """Build from a dict of model args; its keys win over the CLI's batch_size/device."""
        return cls(**cls.model_kwargs(arg_dict, additional_config))

    @classmethod
    def model_kwargs(cls, arg_dict: dict, additional_config: dict | None = None) -> dict:
        """The constructor's arguments: model_args (unknown names refused) over the CLI's."""
        accepted = set(inspect.signature(cls.__init__).parameters) - {"self"}
        refuse_unknown("aqua-audiolm", arg_dict, accepted)
        # lm-eval's CLI always sends batch_size (default 1): without this merge,
        # `--model_args ...,batch_size=8` fails with "multiple values for 'batch_size'".
        harness = harness_settings(cls.HARNESS_ARGS, arg_dict, additional_config)
        if "device" in harness:
            from eval_common.devices import resolve_device

            # lm-eval's CLI sends device=cuda:0 unless told otherwise; on a machine without
            # that device, fall back to the best one here (an explicit model_args device errors).
            try:
                resolve_device(harness["device"])
            except ValueError as error:
                logger.warning("aqua-audiolm: %s; using device=auto", error)
                harness["device"] = "auto"
        return {**arg_dict, **harness}

    @classmethod
    def check_model_args(cls, arg_dict: dict, additional_config: dict | None = None) -> None:
        """ModelArgumentError for the first bad model argument; loads nothing."""
        kwargs = cls.model_kwargs(arg_dict, additional_config)
        parameters = inspect.signature(cls.__init__).parameters
        AudioLMSettings.from_model_args(
            **{
                name: kwargs.get(name, parameter.default)
                for name, parameter in parameters.items()
                if name not in ("self", "max_batch_size")
            }
        )

    @property
    def device(self) -> torch.device:
        """Where the model runs."""
        return self._device

    @property
    def tokenizer_name(self) -> str:
        """Name lm-eval records for --apply_chat_template runs."""
        return self.pretrained.replace("/", "__")

    def chat_template(self, chat_template: bool | str = False) -> str | None:
        """The processor's chat template (recorded by lm-eval in the results)."""
        return getattr(self.processor, "chat_template", None) or ""

    def apply_chat_template(
        self, chat_history: list[dict[str, str]], add_generation_prompt: bool = True
    ) -> str:
        """Render lm-eval's chat history with the processor's template, clips as audio parts."""
        return render_chat(self.processor, chat_history, self.system_prompt, add_generation_prompt)

    def prompt(self, context: str, n_audio: int) -> str:
        """The model's prompt for a request: templated once, one audio token per clip."""
        if self.audio_token not in context:
            if AUDIO_PLACEHOLDER not in context:
                context = AUDIO_PLACEHOLDER * n_audio + "\n" + context
            context = self.apply_chat_template([{"role": "user", "content": context}])
        # Otherwise the context is already a finished prompt (lm-eval --apply_chat_template
        # ran our apply_chat_template, or a task wrote the model's own format): keep it.
        found = context.count(self.audio_token)
        if found != n_audio:
            raise ValueError(
                f"prompt has {found} audio slots for {n_audio} clips; put one "
                f"{AUDIO_PLACEHOLDER!r} in the task prompt per clip"
            )
        return context

    def _gen_settings(self, gen_kwargs: Mapping[str, Any]) -> tuple[list[str], int]:
        until = stop_strings(gen_kwargs)
        ignored = ignored_gen_kwargs(gen_kwargs)
        if ignored and ignored not in self._warned:
            self._warned.add(ignored)
            logger.warning("aqua-audiolm decodes greedily; ignoring gen_kwargs %s", ignored)
        if self.max_gen_toks is not None:
            max_new = self.max_gen_toks
        else:
            max_new = positive_int(
                "max_gen_toks", gen_kwargs.get("max_gen_toks", DEFAULT_MAX_GEN_TOKS)
            )
        return until, max_new

    def encode(self, prompts: list[str], clips: list[list[Mapping[str, Any]]]) -> Any:
        """Processor inputs for a batch, on the model's device; decodes the clips now."""
        waves = [mono_waveform(a, self.sampling_rate) for audio in clips for a in audio]
        inputs = self.processor(
            text=prompts,
            audio=waves,
            sampling_rate=self.sampling_rate,
            # Padding for the text only: each audio family pads its features its own way
            # (Whisper-style encoders to their 30 s window).
            text_kwargs={"padding": True},
            return_tensors="pt",
        )
        # Floating-point features take the model's dtype; token ids stay integers.
        return inputs.to(self._device, self.dtype)

    def generate_until(self, requests: list[Instance], disable_tqdm: bool = False) -> list[str]:
        """Greedy replies for all requests, in request order; each batch kept on disk as done."""
        jobs, report = self._jobs(requests)
        replies: list[str | None] = [None] * len(requests)
        reused = self._read_back(jobs, replies)
        todo = [job for job in jobs if replies[job.index] is None]
        # Longest first: similar lengths share a batch (less padding) and memory errors come early.
        # Requests with different stop settings never share a batch.
        todo.sort(key=lambda j: (j.until, j.max_new, -j.seconds, -len(j.prompt)))
        failures: list[str] = []
        self._succeeded = False
        progress = tqdm(total=len(todo), disable=disable_tqdm, desc="aqua-audiolm")
        start_time = time.perf_counter()
        try:
            for batch in batches(todo, self.batch_size):
                for job, reply in self._run_batch(batch, failures):
                    replies[job.index] = reply
                progress.update(len(batch))
        except BaseException:
            if self.journal is not None:
                logger.error(
                    "aqua-audiolm: stopped; %d replies of this run are kept in %s: run the "
                    "same command again to continue from them",
                    sum(r is not None for r in replies),
                    self.journal.folder,
                )
            raise
        finally:
            progress.close()
        seconds = time.perf_counter() - start_time
        if failures:
            logger.warning(
                "aqua-audiolm: %d item(s) failed and are scored as unparsed errors: %s",
                len(failures),
                "; ".join(failures[:10]),
            )
        self._record_run(
            {
                "items": len(jobs),
                "generated": len(todo) - len(failures),
                "reused": reused,
                "failed": len(failures),
                "generation_seconds": seconds,
                **report.counts(),
            }
        )
        return [r if r is not None else "" for r in replies]

    def _jobs(self, requests: list[Instance]) -> tuple[list[Job], ClipReport]:
        """One job per request, keyed by its content; every clip checked before any generation."""
        jobs = []
        for index, request in enumerate(requests):
            context, gen_kwargs = request.args[0], request.args[1]
            audio = request_clips(request, self.AUDIO_MODEL, f"use {self.TEXT_ONLY_MODEL}")
            until, max_new = self._gen_settings(gen_kwargs or {})
            prompt = self.prompt(context, len(audio))
            jobs.append(Job(index, request, prompt, audio, tuple(until), max_new))
        # Every clip is read and judged before the first generate call (audio/checks.py).
        report = check_clips([a for job in jobs for a in job.audio], self.clip_limits)
        facts = iter(report.facts)
        for job in jobs:
            clips = [next(facts) for _ in job.audio]
            job.seconds = sum(f.samples for f in clips) / self.sampling_rate
            job.key = request_key(job.prompt, [f.digest for f in clips], job.until, job.max_new)
        for kind, sources in (("silent", report.silent), ("over_window", report.over_window)):
            if sources:
                logger.warning(
                    "aqua-audiolm: %d clip(s) %s, run as they are (e.g. %s)",
                    len(sources),
                    CLIP_NOTES[kind],
                    sources[0],
                )
        return jobs, report

    def _read_back(self, jobs: list[Job], replies: list[str | None]) -> int:
        """Fill in the replies the journal already holds; how many there were."""
        reused = 0
        for job in jobs:
            stored = self.journal.get(job.key) if self.journal is not None else None
            if stored is not None:
                replies[job.index] = stored
                reused += 1
        if reused:
            logger.info(
                "aqua-audiolm: %d of %d replies read back from %s (reply_cache=off regenerates)",
                reused,
                len(jobs),
                self.journal.folder,
            )
        return reused

    def _run_batch(self, batch: list[Job], failures: list[str]) -> list[tuple[Job, str]]:
        """Replies for one batch, stored as soon as made; a failing item gets a failed reply."""
        import torch

        try:
            texts = self._generate([job.prompt for job in batch], batch)
        except torch.OutOfMemoryError:
            if len(batch) == 1:
                raise
            # Halve the batch and go on; the replies already made are on disk either way.
            logger.warning("aqua-audiolm: out of memory at batch %d; halving it", len(batch))
            self._release_memory()
            half = len(batch) // 2
            return self._run_batch(batch[:half], failures) + self._run_batch(batch[half:], failures)
        except (KeyboardInterrupt, SystemExit):
            raise
        except Exception as error:
            if len(batch) > 1:
                # Find the item(s) at fault: every other item still gets its real reply.
                done: list[tuple[Job, str]] = []
                for job in batch:
                    done += self._run_batch([job], failures)
                return done
            (job,) = batch
            message = f"{type(error).__name__}: {error}"
            failures.append(f"{job.request.task_name} doc {job.request.doc_id}: {message}")
            logger.debug("aqua-audiolm: generation failed", exc_info=True)
            if not self._succeeded and len(failures) >= MAX_FAILURES:
                raise RuntimeError(
                    f"aqua-audiolm: the first {len(failures)} items all failed, stopping "
                    f"(last: {message})"
                ) from error
            return [(job, failed_reply(message))]
        done = list(zip(batch, texts, strict=True))
        if self.journal is not None:
            self.journal.put((job.key, text) for job, text in done)
        for job, text in done:
            # lm-eval's --use_cache: its store gets each reply as it is produced.
            self.cache_hook.add_partial("generate_until", job.request.args, text)
        self._succeeded = True
        return done

    def _generate(self, prompts: list[str], batch: list[Job]) -> list[str]:
        import torch

        until, max_new = list(batch[0].until), batch[0].max_new
        inputs = self.encode(prompts, [job.audio for job in batch])
        # Stopping early at a stop string saves time only; replies are cut below either way.
        stops = until if getattr(self.processor, "stops_in_generate", True) else []
        with torch.inference_mode():
            output = self.model.generate(
                **inputs,
                max_new_tokens=max_new,
                do_sample=False,
                eos_token_id=self.eos_token_ids,
                pad_token_id=self.pad_token_id,
                stop_strings=stops or None,
                tokenizer=self.tokenizer if stops else None,
            )
        new_tokens = output[:, inputs["input_ids"].shape[1] :]
        texts = self.tokenizer.batch_decode(new_tokens, skip_special_tokens=True)
        # A row still generating at the last step (its last token is no end or padding) was
        # cut by max_new_tokens: marked, so the extractor reads it as possibly unfinished.
        ends = {*self.eos_token_ids, self.pad_token_id}
        at_limit = [
            new_tokens.shape[1] >= max_new and int(row[-1]) not in ends for row in new_tokens
        ]
        replies = []
        for text, limited in zip(texts, at_limit, strict=True):
            cut = cut_at_stop(text, until)
            replies.append(limited_reply(cut) if limited and cut == text else cut)
        return replies

    def _release_memory(self) -> None:
        import torch

        if torch.cuda.is_available():
            torch.cuda.empty_cache()

    def _record_run(self, counts: dict[str, Any]) -> None:
        """Add this call's counts, time and peak memory to the run's record (all ranks)."""
        mine = {**counts, "peak_memory_mb": peak_memory_mb(self._device)}
        ranks = self._collective.all_objects(mine) if self._collective is not None else [mine]
        add_call(self.run_info, ranks)

    def get_model_info(self) -> dict[str, Any]:
        """What lm-eval adds to the results' `config`: filled in as generation runs."""
        # lm-eval asks before any request is run and writes the results file at the end:
        # handing over this very dict lets the throughput measured meanwhile reach the file.
        return {"aqua_audiolm": self.run_info}

    def all_gather(self, tensor: Any) -> Any:
        """All ranks' tensors (lm-eval pads ranks to equal request counts with it)."""
        return tensor if self._collective is None else self._collective.all_gather(tensor)

    def gather_object(self, obj: Any, dst: int = 0) -> list[Any] | None:
        """Every rank's object on `dst` (how lm-eval collects per-item results on rank 0)."""
        if self._collective is None:
            return [obj]
        return self._collective.gather_object(obj, dst)

    def barrier(self) -> None:
        """Wait for all ranks."""
        if self._collective is not None:
            self._collective.barrier()

    def loglikelihood(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: audio LMs are evaluated generatively here."""
        raise NotImplementedError(
            "aqua-audiolm supports only generate_until tasks (no loglikelihood / multiple-choice "
            "output_type)"
        )

    def loglikelihood_rolling(self, requests: list[Instance], disable_tqdm: bool = False) -> list:
        """Not supported: audio LMs are evaluated generatively here."""
        raise NotImplementedError(
            "aqua-audiolm supports only generate_until tasks (no loglikelihood_rolling / "
            "perplexity output_type)"
        )
