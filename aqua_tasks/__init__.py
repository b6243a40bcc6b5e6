"""AQUA-Bench for lm-eval and lmms-eval: does an audio LM know when a question has no answer?

The names below are the public Python API; everything else is reached through the console
scripts and task YAMLs. They are loaded on first use: the start-up hook imports this package
at every Python start, which must not pull in numpy, torch or a harness.
"""

from __future__ import annotations

from eval_common.lazy_exports import lazy_getattr

# public name -> module that defines it
_EXPORTS = {
    # the error family: every error of the benchmark is an AquaError
    "AquaError": "aqua_tasks.errors",
    "AquaDataError": "aqua_tasks.errors",
    "BuildError": "aqua_tasks.errors",
    # the released questions
    "AquaItem": "aqua_tasks.core.data",
    "load_items": "aqua_tasks.core.data",
    "track_file": "aqua_tasks.core.data",
    # answer extraction and scoring
    "Extraction": "aqua_tasks.core.extract",
    "extract": "aqua_tasks.core.extract",
    "rescoring_notice": "aqua_tasks.core.extract",
    "Verdict": "aqua_tasks.core.scoring",
    "score_reply": "aqua_tasks.core.scoring",
    "summarize": "aqua_tasks.core.scoring",
    # saved runs scored as aqua score, aqua report and aqua regress score them
    "RunScores": "aqua_tasks.runs.scoring",
    "ScoreSettings": "aqua_tasks.runs.scoring",
    "read_run": "aqua_tasks.runs.read",
    "score_run": "aqua_tasks.runs.scoring",
    # audio
    "AudioRoots": "aqua_tasks.audio.clips",
    "LazyAudio": "aqua_tasks.audio.clips",
    "audio_for_item": "aqua_tasks.audio.clips",
    "load_audio": "aqua_tasks.audio.clips",
    "resolve_audio": "aqua_tasks.audio.clips",
    # aqua build: AQUA's four types for another multiple-choice audio benchmark
    "BuildConfig": "aqua_tasks.build.builder",
    "GeneratorSettings": "aqua_tasks.build.api",
    "build_file": "aqua_tasks.build.api",
    # lm-eval: tasks, models and `metric: orca` registered for the Python API (the plugin edge)
}

__all__ = sorted(_EXPORTS)


__getattr__ = lazy_getattr(__name__, _EXPORTS)
