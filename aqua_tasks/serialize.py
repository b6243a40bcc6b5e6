"""JSON output helpers shared by the command-line tools."""

from __future__ import annotations

import math


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
