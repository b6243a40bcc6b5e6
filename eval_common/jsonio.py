"""JSON output helpers shared by the command-line tools."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from eval_common.outputs import write_text

# A chat model's JSON reply may come inside a Markdown code fence.
_FENCE = re.compile(r"^```(?:json)?\s*(.*?)\s*```$", re.DOTALL | re.IGNORECASE)


def json_object_in_reply(text: str) -> dict | None:
    """The JSON object a chat model's reply holds (bare or in a code fence), else None."""
    body = text.strip()
    fenced = _FENCE.match(body)
    if fenced:
        body = fenced.group(1)
    try:
        data = json.loads(body)
    except ValueError:
        return None
    return data if isinstance(data, dict) else None


def json_safe(value: object) -> object:
    """`value` with every NaN float replaced by None (JSON has no NaN), containers recursed.

    Tuples become lists, as `json.dumps` would write them anyway.
    """
    if isinstance(value, float) and math.isnan(value):
        return None
    if isinstance(value, dict):
        return {k: json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return value


def write_jsonl(path: str | Path, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write one JSON object per line (UTF-8), atomically, creating the folder; returns the path."""
    # default=str: paths and other plain values in rows are recorded as text, not refused.
    text = "".join(json.dumps(r, ensure_ascii=False, default=str) + "\n" for r in rows)
    return write_text(path, text)
