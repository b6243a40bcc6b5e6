"""Installed, the package leaves lm-eval's own behaviour alone where our tasks are not used:
the CLI run wrapper calls whatever `lm_eval.simple_evaluate` was (a user's wrapper, a test's
mock), and puts it back afterwards (lm-eval's own tests/test_cli_subcommands.py mocks it)."""

from __future__ import annotations

import lm_eval

from eval_plugins.lm_eval.cli_run import command_line_run


def test_a_simple_evaluate_set_before_the_run_is_called_and_put_back(monkeypatch):
    calls = []

    def users_wrapper(**kwargs):
        calls.append(kwargs)
        return {"results": {"hellaswag": {"acc,none": 0.75}}}

    monkeypatch.setattr(lm_eval, "simple_evaluate", users_wrapper, raising=False)
    with command_line_run() as record:
        results = lm_eval.simple_evaluate(model="hf")
    assert calls == [{"model": "hf"}]
    assert record.results == [results] and record.failures == []
    assert lm_eval.simple_evaluate is users_wrapper


def test_without_one_the_package_attribute_is_left_unset(monkeypatch):
    monkeypatch.delitem(lm_eval.__dict__, "simple_evaluate", raising=False)
    with command_line_run():
        assert "simple_evaluate" in lm_eval.__dict__
    assert "simple_evaluate" not in lm_eval.__dict__
