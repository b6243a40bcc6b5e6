"""Installed, the package leaves lm-eval's own behaviour alone where our tasks are not used: it
sets no attribute of the `lm_eval` package, so whatever `lm_eval.simple_evaluate` a user or a
test sets (lm-eval's own tests/test_cli_subcommands.py mocks it) is what lm-eval's CLI calls."""

from __future__ import annotations

import lm_eval

from eval_plugins.lm_eval.cli_run import command_line_run


def test_a_simple_evaluate_set_by_a_user_is_left_as_it_is(monkeypatch):
    calls = []

    def users_wrapper(**kwargs):
        calls.append(kwargs)
        return {"results": {"hellaswag": {"acc,none": 0.75}}}

    monkeypatch.setattr(lm_eval, "simple_evaluate", users_wrapper, raising=False)
    with command_line_run() as record:
        assert lm_eval.simple_evaluate is users_wrapper
        lm_eval.simple_evaluate(model="hf")
    assert calls == [{"model": "hf"}] and record.failures == []
    assert lm_eval.simple_evaluate is users_wrapper


def test_the_package_attribute_stays_lm_evals_lazy_lookup(monkeypatch):
    from lm_eval import evaluator

    monkeypatch.delitem(lm_eval.__dict__, "simple_evaluate", raising=False)
    with command_line_run():
        assert "simple_evaluate" not in lm_eval.__dict__
        assert lm_eval.simple_evaluate is evaluator.simple_evaluate
    assert "simple_evaluate" not in lm_eval.__dict__
