"""Fixtures shared by the ORCA tests."""

from __future__ import annotations

import pytest

from orca_judge.judge import OrcaJudge


@pytest.fixture
def scored(monkeypatch) -> list[int]:
    """How many items each call of the judge scored."""
    calls: list[int] = []
    original = OrcaJudge.score

    def counting(self, records, *args, **kwargs):
        calls.append(len(records))
        return original(self, records, *args, **kwargs)

    monkeypatch.setattr(OrcaJudge, "score", counting)
    return calls
