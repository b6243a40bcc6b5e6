"""What `--help` says: our examples and the defaults the code really applies."""

from __future__ import annotations

import contextlib
import io

import pytest

from aqua_tasks.cli import score as cli_score
from aqua_tasks.core.extract import DEFAULT_EXTRACTOR
from eval_plugins.cli import aqua_eval as cli_eval
from orca_judge.cli import train as cli_train


def help_text(main, *args: str) -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out), pytest.raises(SystemExit) as done:
        main([*args, "--help"])
    assert done.value.code == 0
    return " ".join(out.getvalue().split())  # argparse wraps lines where it likes


@pytest.mark.parametrize("args", [(), ("run",)])
def test_aqua_eval_help_is_lm_evals_followed_by_our_models_and_examples(args):
    text = help_text(cli_eval.main, *args)
    assert text.startswith("usage: lm-eval ")  # lm-eval's own parser, untouched
    ours = text[text.index("aqua eval is lm-eval's command line (above)") :]
    assert "aqua-audiolm" in ours and "openai-audio-chat" in ours
    assert "aqua eval --model aqua-audiolm" in ours and "--tasks 'aqua_*'" in ours
    assert ours.endswith("docs/guide.md, docs/audio_lm.md.")
    assert '--metadata \'{"data_dir": "DATA", "audio_root": "AUDIO"}\'' in ours


def test_aqua_score_help_names_the_extractor_it_really_defaults_to():
    text = help_text(cli_score.main, "x")
    assert f"default: the one the run recorded, else {DEFAULT_EXTRACTOR})" in text
    assert "else mmau" not in text


def test_orca_train_help_says_the_backbone_has_no_default_and_where_to_give_it():
    text = help_text(cli_train.main)
    assert "(default )" not in text
    assert "base transformer. (no default: give it here or as `backbone:` in --config)" in text
    assert "Rating likelihood: multinomial, beta or bernoulli. (default multinomial)" in text
