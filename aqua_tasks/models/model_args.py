"""Checks every model class of this package applies to its `--model_args`, with one error type.

lm-eval hands model arguments over as strings or as its own guesses at their type
(`seed=abc` stays a string, `timeout=0` becomes an int). A bad one is a `ModelArgumentError`
whose message is the one line the user sees: the argument, the value and what is allowed.
`aqua eval` and plain `lm_eval` (through the start-up hook) print that line and exit non-zero;
with the hook off, lm-eval's traceback ends with it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from aqua_tasks.errors import ModelArgumentError
from eval_common.cli import number_problem

# Hub ids are `name` or `namespace/name`; these prefixes only ever start a local path.
LOCAL_PREFIXES = ("/", "./", "../", "~", ".\\", "..\\")


def positive_int(name: str, value: object) -> int:
    """A model argument that must be an integer >= 1."""
    return bounded_int(name, value, minimum=1)


def bounded_int(name: str, value: object, *, minimum: int = 0) -> int:
    """A model argument that must be an integer >= `minimum`."""
    try:
        number = int(str(value).strip())
    except ValueError:
        number = None
    if number is None or isinstance(value, float) or number < minimum:
        raise ModelArgumentError(f"{name}={value!r}: expected an integer >= {minimum}")
    return number


def finite_number(
    name: str,
    value: object,
    *,
    minimum: float = 0.0,
    maximum: float | None = None,
    open_interval: bool = False,
) -> float:
    """A model argument that must be a finite number >= `minimum` (> with `open_interval`),
    and at most `maximum` when given."""
    try:
        number = float(str(value).strip())
    except ValueError:
        raise ModelArgumentError(
            f"{name}={value!r}: expected a finite number "
            f"{'>' if open_interval else '>='} {minimum:g}"
        ) from None
    problem = number_problem(
        name, number, minimum=minimum, maximum=maximum, open_interval=open_interval
    )
    if problem is not None:
        raise ModelArgumentError(f"{name}={value!r}: {problem.partition(': ')[2]}")
    return number


def refuse_unknown(model: str, given: Iterable[str], accepted: Iterable[str]) -> None:
    """ModelArgumentError naming the model arguments `model` does not take, and those it does."""
    known = set(accepted)
    unknown = sorted(set(given) - known)
    if unknown:
        raise ModelArgumentError(
            f"{model}: unknown model argument(s) {', '.join(unknown)}; accepted: "
            f"{', '.join(sorted(known)) or '(none)'}"
        )


def checked_device(name: str | None) -> str | None:
    """`device` as given, if this machine has it; ModelArgumentError saying what it has."""
    if name is None:
        return None
    from eval_common.devices import resolve_device

    try:
        resolve_device(name)
    except ValueError as error:
        raise ModelArgumentError(
            f"{error}; use device=auto (the best device here) or device=cpu"
        ) from None
    return name


def checked_pretrained(value: object) -> str:
    """`pretrained` as given; ModelArgumentError when it looks like a local folder that is not one.

    A Hub id (`org/name`) is passed through untouched: transformers resolves it. Without this,
    a mistyped folder reaches the Hub client, whose "Repo id must be in the form..." hides
    that the folder is missing.
    """
    text = str(value).strip()
    path = Path(text).expanduser()
    if path.is_dir():
        return text
    if path.exists():
        raise ModelArgumentError(
            f"pretrained={text!r} is a file; give the model's folder (with config.json) "
            "or a Hub id such as Qwen/Qwen2-Audio-7B-Instruct"
        )
    looks_local = text.startswith(LOCAL_PREFIXES) or text.count("/") > 1 or "\\" in text
    if looks_local:
        raise ModelArgumentError(
            f"pretrained={text!r}: no such folder; give an existing model folder "
            "(with config.json) or a Hub id such as Qwen/Qwen2-Audio-7B-Instruct"
        )
    return text


def harness_settings(
    harness_args: Iterable[str], arg_dict: Mapping, additional_config: Mapping | None
) -> dict:
    """The CLI-level settings lm-eval sends (batch_size, device, ...) not set in model_args."""
    names = set(harness_args)
    return {
        k: v
        for k, v in (additional_config or {}).items()
        if v is not None and k in names and k not in arg_dict
    }


class ArgsThroughArgObj:
    """Mixed in before lm-eval's `LM`: `--model_args` strings go through `create_from_arg_obj`.

    lm-eval's own `LM.create_from_arg_string` calls the constructor directly, which would skip
    the class's `create_from_arg_obj` (unknown names refused, model_args over the CLI's
    batch_size/device); here the string is parsed as lm-eval parses it, then handed there.
    """

    @classmethod
    def create_from_arg_string(cls, arg_string: str, additional_config: dict | None = None):
        """Build from `--model_args`; its keys win over the CLI's batch_size/device defaults."""
        from lm_eval.utils import simple_parse_args_string

        return cls.create_from_arg_obj(simple_parse_args_string(arg_string), additional_config)
