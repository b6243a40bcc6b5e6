"""What `--help` says: our examples and the defaults the code really applies."""

from __future__ import annotations

import contextlib
import io

import pytest

from aqua_tasks.cli import eval as cli_eval
from aqua_tasks.cli import score as cli_score
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR
from orca_judge.cli import train as cli_train


def help_text(main, *args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*args, "--help"])
    assert done.value.code == 0
    return " ".join(out.getvalue().split())  # argparse wraps lines where it likes


@pytest.mark.parametrize("args", [(), ("run",)])
def test_aqua_eval_help_ends_with_our_examples_not_lm_evals_quick_start(args):
    text = help_text(cli_eval.main, *args)
    assert "hellaswag" not in text and "lm-eval run" not in text and "quick start" not in text
    assert "aqua-eval --model aqua-audiolm" in text and "--tasks 'aqua_*'" in text
    assert '--metadata \'{"data_dir": "DATA", "audio_root": "AUDIO"}\'' in text
    if args:
        assert text.startswith("usage: aqua-eval run ")


def test_aqua_score_help_names_the_extractor_it_really_defaults_to():
    text = help_text(cli_score.main, "x")
    assert f"default: the one the run recorded, else {DEFAULT_EXTRACTOR})" in text
    assert "else mmau" not in text


def test_orca_train_help_says_the_backbone_has_no_default_and_where_to_give_it():
    text = help_text(cli_train.main)
    assert "(default )" not in text
    assert "base transformer. (no default: give it here or as `backbone:` in --config)" in text
    assert "Rating likelihood: multinomial, beta or bernoulli. (default multinomial)" in text
