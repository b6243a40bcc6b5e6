"""`aqua-eval`: lm-eval's CLI with the AQUA tasks, metrics and models loaded first."""

from __future__ import annotations

import sys
from collections.abc import Sequence

from aqua_tasks.api_audio_lm import EndpointError
from aqua_tasks.audio import AudioFileError
from aqua_tasks.cli_common import fail
from aqua_tasks.data import AquaDataError
from aqua_tasks.registration import register_all, task_config_dir
from aqua_tasks.results_table import paper_table
from aqua_tasks.run_settings import check_aqua_metadata, selects_aqua_tasks
from orca_judge.lm_eval.compat import tracker_output_folder
from orca_judge.lm_eval.judge_pass import JudgeSession, session_scope
from orca_judge.lm_eval.settings import OrcaMetricError

PROG = "aqua-eval"
# lm-eval 0.4.13's own audio model cannot run (broken registry name, transformers 5, CUDA only).
MODEL_ALIASES = {"hf-audiolm-qwen": "aqua-audiolm"}
ALIAS_REASON = "lm-eval 0.4.13's own hf-audiolm-qwen is broken; see docs/audio_lm.md"


def main(argv: Sequence[str] | None = None) -> int:
    """Run lm-eval's command line with our task folder on the include path."""
    import lm_eval
    from lm_eval import evaluator
    from lm_eval._cli import HarnessCLI
    from lm_eval.utils import setup_logging

    register_all()
    runs: list[dict] = []
    failures: list[str] = []

    def evaluate_and_keep(*args: object, **kwargs: object) -> dict | None:
        # Per-item judge results go where lm-eval's tracker writes the samples; each
        # evaluation inside gets its own judge session, sharing this folder and failure log.
        folder = tracker_output_folder(kwargs.get("evaluation_tracker"))
        with session_scope(JudgeSession(output_folder=folder, failures=failures)):
            results = evaluator.simple_evaluate(*args, **kwargs)
        if results is not None:
            runs.append(results)
        return results

    # lm-eval's CLI fetches `lm_eval.simple_evaluate` at run time and never returns the
    # results; wrapping it is how we print the paper's table after lm-eval's own.
    lm_eval.simple_evaluate = evaluate_and_keep
    setup_logging()
    saved_argv = sys.argv
    # lm-eval's parser reads sys.argv itself (it inserts the implicit `run` subcommand there).
    sys.argv = [PROG, *(sys.argv[1:] if argv is None else argv)]
    try:
        parser = HarnessCLI()
        parser._parser.prog = PROG
        parser._parser.description = (
            "lm-eval's command line with the AQUA-Bench tasks (aqua, aqua_*, aqua-*), the "
            "metric `orca` and the models aqua-audiolm, aqua-replay, aqua-always-reject, "
            "aqua-random, aqua-first-option and orca-replay available. Flags are lm-eval's."
        )
        args = parser.parse_args()
        if getattr(args, "command", None) == "run" and selects_aqua_tasks(args.tasks):
            check_aqua_metadata(args.metadata)
        if getattr(args, "model", None) in MODEL_ALIASES:
            ours = MODEL_ALIASES[args.model]
            print(f"{PROG}: --model {args.model} runs {ours} ({ALIAS_REASON})", file=sys.stderr)
            args.model = ours
        if hasattr(args, "include_path"):
            # The CLI accepts one folder; lm-eval's TaskManager accepts a list, ours first.
            extra = args.include_path
            args.include_path = [str(task_config_dir())] + ([extra] if extra else [])
        parser.execute(args)
    except (OrcaMetricError, AquaDataError, AudioFileError, EndpointError) as err:
        # Bad settings or data are the user's to fix: one line, not a traceback.
        return fail(PROG, str(err))
    finally:
        sys.argv = saved_argv
        del lm_eval.simple_evaluate
    for results in runs:
        table = paper_table(results)
        if table:
            print(f"\nAQUA-Bench (paper layout, %):\n{table}")
    for message in failures:
        fail(PROG, message)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
