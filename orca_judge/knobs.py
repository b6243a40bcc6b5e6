"""Typed settings dataclasses: every knob a field with a one-line help and its allowed values.

`OrcaConfig` (what a checkpoint records) and `TrainingArguments` (how a judge is trained) are
both `Knobs`: their values are checked by one rule set, read from the field's type (whole
number, number, true/false, text, list of names; `| None` allows null) and from what `knob`
was given (`choices`, a `minimum`/`maximum`). A refusal names the field and what it expects.
"""

from __future__ import annotations

import dataclasses
import functools
import types
import typing
from typing import Any, ClassVar, TypeVar

from eval_common.cli import number_problem

K = TypeVar("K", bound="Knobs")


def knob(default: Any, help: str, **rule: Any) -> Any:
    """A settings field: its default, a one-line help and its rule (choices, minimum, …)."""
    metadata = {"help": help, **rule}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=metadata)
    return dataclasses.field(default=default, metadata=metadata)


@dataclasses.dataclass(frozen=True)
class _Kind:
    base: Any  # int, float, bool, str or list
    optional: bool


@functools.cache
def _kinds(cls: type) -> dict[str, _Kind]:
    # The annotations are strings (postponed evaluation); resolve them without eval.
    kinds = {}
    for name, hint in typing.get_type_hints(cls).items():
        if typing.get_origin(hint) is ClassVar:
            continue
        args = typing.get_args(hint)
        union = isinstance(hint, types.UnionType) or typing.get_origin(hint) is typing.Union
        base = next(a for a in args if a is not type(None)) if union else hint
        if typing.get_origin(base) is list:
            base = list
        kinds[name] = _Kind(base, union and type(None) in args)
    return kinds


class Knobs:
    """Shared behaviour of the settings dataclasses: checking, help, dict round trip."""

    # Knobs that change how a run computes, not what it computes: a resumed run may differ.
    RUNTIME_ONLY: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        # A whole float (1000.0, as some trainers' YAML writes) is the int it stands for.
        for name, kind in _kinds(type(self)).items():
            value = getattr(self, name)
            if kind.base is int and isinstance(value, float) and value.is_integer():
                setattr(self, name, int(value))
        self.validate()

    @classmethod
    def field_names(cls) -> tuple[str, ...]:
        """The names of the fields, in declaration order."""
        return tuple(f.name for f in dataclasses.fields(cls))

    @classmethod
    def field_type(cls, name: str) -> Any:
        """A field's value type without None: int, float, bool, str or list."""
        return _kinds(cls)[name].base

    @classmethod
    def field_problem(cls, name: str, value: Any, label: str | None = None) -> str | None:
        """Why `value` is refused for field `name` (wrong type, out of range), or None.

        The message names the field as `label` (a flag, say), by default as `name`.
        """
        label = label or name
        kind = _kinds(cls)[name]
        rule = {k: v for k, v in cls.__dataclass_fields__[name].metadata.items() if k != "help"}
        if value is None and kind.optional:
            return None
        if "choices" in rule:
            allowed = rule["choices"]
            ok = value in allowed if isinstance(value, str) else False
            return None if ok else f"{label}={value!r}; expected one of {', '.join(allowed)}"
        if kind.base is bool:
            ok = isinstance(value, bool)
            return None if ok else f"{label}: expected true or false, got {value!r}"
        if kind.base is list:
            ok = isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value)
            return None if ok else f"{label}: expected a list of {rule['items']}, got {value!r}"
        if kind.base is str:
            return None if isinstance(value, str) else f"{label}: expected text, got {value!r}"
        whole = kind.base is int
        if whole and isinstance(value, float) and value.is_integer():
            value = int(value)
        if isinstance(value, bool) or not isinstance(value, int if whole else (int, float)):
            what = "a whole number" if whole else "a number"
            low = f" >= {rule['minimum']}" if "minimum" in rule and whole else ""
            none = " or null" if kind.optional else ""
            return f"{label}: expected {what}{low}{none}, got {value!r}"
        return number_problem(label, value, **rule)

    def validate(self) -> None:
        """Raise ValueError naming the first invalid field."""
        for name in self.field_names():
            if problem := self.field_problem(name, getattr(self, name)):
                raise ValueError(f"{type(self).__name__}.{problem}")

    @classmethod
    def field_help(cls) -> dict[str, str]:
        """Field name -> one-line help."""
        return {f.name: f.metadata["help"] for f in dataclasses.fields(cls)}

    def to_dict(self) -> dict[str, Any]:
        """The fields as a plain mapping (what JSON files record)."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls: type[K], data: dict[str, Any]) -> K:
        """Build from a dict, rejecting unknown keys."""
        unknown = sorted(set(data) - set(cls.field_names()))
        if unknown:
            raise ValueError(f"unknown {cls.__name__} fields: {', '.join(unknown)}")
        return cls(**data)

    def replace(self: K, **changes: Any) -> K:
        """A copy with `changes` applied (and checked)."""
        return dataclasses.replace(self, **changes)
