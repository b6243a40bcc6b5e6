"""`aqua-eval`: lm-eval's CLI with the AQUA tasks, metrics and models loaded first."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from aqua_tasks.errors import AquaDataError
from eval_common.cli import RESUMES, command, fail
from eval_plugins.lm_eval.aqua.task_folder import task_config_dir
from eval_plugins.lm_eval.aqua.task_index import indexing_for
from eval_plugins.lm_eval.aqua.user_tasks import check_user_task_yamls
from eval_plugins.lm_eval.cli_run import (
    check_run_settings,
    command_line_run,
    harness_refusal,
    report,
)
from eval_plugins.lm_eval.compat import harness_cli, lm_eval_problem, scoring_pipeline
from eval_plugins.lm_eval.harness_errors import json_flag_problem
from eval_plugins.lm_eval.registration import install_task_index, register_all
from eval_plugins.names import LM_EVAL, targets

PROG = "aqua-eval"
# lm-eval 0.4.13's own audio model cannot run (broken registry name, transformers 5, CUDA only).
MODEL_ALIASES = {"hf-audiolm-qwen": "aqua-audiolm"}
ALIAS_REASON = "lm-eval 0.4.13's own hf-audiolm-qwen is broken; see docs/audio_lm.md"
# Our examples, in place of lm-eval's quick start (`--tasks hellaswag`), which names no task
# or model of this package.
EPILOG = f"""examples:
  # The AQUA-Bench tracks with an audio LM (the released files in DATA, the clips in AUDIO)
  {PROG} --model aqua-audiolm --model_args pretrained=Qwen/Qwen2-Audio-7B-Instruct \\
    --tasks 'aqua_*' --metadata '{{"data_dir": "DATA", "audio_root": "AUDIO"}}' \\
    --output_path runs/qwen2-audio --log_samples

  # A baseline, text only, on four items per track
  {PROG} --model aqua-always-reject --tasks aqua --limit 4 \\
    --metadata '{{"data_dir": "DATA", "audio": false}}'

  # Score the saved replies again, compare two runs
  aqua-score runs/qwen2-audio
  aqua-regress --baseline runs/base --candidate runs/qwen2-audio

  {PROG} run --help lists every flag (they are lm-eval's); the tasks, metadata keys and
  models: README.md, docs/audio_lm.md.
"""


def model_names() -> list[str]:
    """The lm-eval model names this plugin registers (`eval_plugins.names`)."""
    return list(targets(LM_EVAL, "models"))


def flag_value(argv: Sequence[str], *names: str) -> str | None:
    """The value of the last of `names` given in `argv` (`--flag VALUE` or `--flag=VALUE`)."""
    found = None
    for index, arg in enumerate(argv):
        flag, equals, value = arg.partition("=")
        if flag in names:
            found = value if equals else (argv[index + 1] if index + 1 < len(argv) else None)
    return found


def with_model_alias(argv: list[str]) -> list[str]:
    """`argv` with an lm-eval model name we stand in for replaced by ours (said on stderr)."""
    given = flag_value(argv, "--model")
    if given not in MODEL_ALIASES:
        return argv
    ours = MODEL_ALIASES[given]
    print(f"{PROG}: --model {given} runs {ours} ({ALIAS_REASON})", file=sys.stderr)
    return [ours if arg == given else arg.replace(f"={given}", f"={ours}") for arg in argv]


def run_public_cli(argv: list[str]) -> int:
    """lm-eval's 0.5 line: its own command line (public entry point) with our registrations,
    then the AQUA table pooled over clips, read back from the saved samples by `aqua-score`
    (lm-eval 0.5 gives a group only averaged figures, so the `aqua` row has none there)."""
    from lm_eval.__main__ import cli_evaluate

    argv = with_model_alias(argv)
    check_user_task_yamls(flag_value(argv, "--include_path"))
    saved_argv = sys.argv
    sys.argv = [PROG, *argv]
    try:
        cli_evaluate()
    except Exception as err:
        line = harness_refusal(err)
        if line is None:
            raise
        return fail(PROG, line)
    finally:
        sys.argv = saved_argv
    output = flag_value(argv, "--output_path", "-o")
    if output and ("--log_samples" in argv or "-s" in argv):
        print_pooled_table(Path(output))
    return 0


def print_pooled_table(output: Path) -> None:
    """The AQUA table of the run's saved samples, every all-tracks row pooled over clips:
    the scoring pipeline of `aqua-score` (a run without AQUA tasks prints nothing)."""
    from aqua_tasks.reports.tables import format_table
    from aqua_tasks.runs import ScoreSettings, read_run, score_run

    try:
        scores = score_run(read_run(output), ScoreSettings(), progress=False)
    except AquaDataError as error:  # no AQUA samples there, or none this package can read
        print(f"{PROG}: no AQUA table ({error})", file=sys.stderr)
        return
    print("\nAQUA-Bench (pooled over clips, read back from the saved samples, %):")
    print(format_table(scores.results, intervals=scores.intervals))


@command(PROG, on_interrupt=RESUMES)
def main(argv: Sequence[str] | None = None) -> int:
    """Run lm-eval's command line with our task folder on the include path."""
    from lm_eval.tasks import TaskManager
    from lm_eval.utils import setup_logging

    problem = lm_eval_problem()
    if problem:
        return fail(PROG, problem)
    if scoring_pipeline():
        register_all()
        install_task_index(TaskManager)
        given = list(sys.argv[1:] if argv is None else argv)
        if bad_json := json_flag_problem(given):
            return fail(PROG, bad_json)
        return run_public_cli(given)
    # Also done by the start-up hook when lm-eval imports; idempotent, and needed when the
    # hook is switched off.
    register_all()
    install_task_index(TaskManager)
    setup_logging()
    saved_argv = sys.argv
    # lm-eval's parser reads sys.argv itself (it inserts the implicit `run` subcommand there).
    sys.argv = [PROG, *(sys.argv[1:] if argv is None else argv)]
    bad_json = json_flag_problem(sys.argv[1:])
    if bad_json:
        sys.argv = saved_argv
        return fail(PROG, bad_json)
    args = None
    try:
        with command_line_run() as record:
            parser = harness_cli(
                PROG,
                "lm-eval's command line with the AQUA-Bench tasks (aqua, aqua_*, aqua-*), the "
                f"metric `orca` and the models {', '.join(model_names())} available. "
                "Flags are lm-eval's.",
                EPILOG,
            )
            sys.argv = [PROG, *with_model_alias(sys.argv[1:])]
            args = parser.parse_args()
            check_run_settings(args)
            if hasattr(args, "include_path"):
                check_user_task_yamls(args.include_path)
                # The CLI accepts one folder; lm-eval's TaskManager accepts a list, ours first.
                extra = args.include_path
                args.include_path = [str(task_config_dir())] + ([extra] if extra else [])
            with indexing_for(args):
                parser.execute(args)
    except Exception as err:
        # Bad settings or data are the user's to fix: one line, not a traceback.
        line = harness_refusal(err)
        if line is None:
            raise
        return fail(PROG, line)
    finally:
        sys.argv = saved_argv
    return report(record, PROG)


if __name__ == "__main__":
    sys.exit(main())
