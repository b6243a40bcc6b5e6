"""The Python API behind `aqua build`: pick a generator, read a source, build, write."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from aqua_tasks.build.builder import BuildConfig, BuildResult, build, write_result
from aqua_tasks.build.categories import Bank, default_bank
from aqua_tasks.build.iaqd import IaqdGenerator, TemplateGenerator
from aqua_tasks.build.source import MMAU_FIELDS, FieldMap, SourceItem, read_source
from aqua_tasks.core.manifest import sha256_file
from aqua_tasks.errors import BuildError

GENERATORS = ("template", "openai", "hf")
SOURCES = ("mmau", "mc", "hf")
MMAU_OUTPUT = "AQUA-Bench-MMAU-Track.json"


@dataclass(frozen=True)
class GeneratorSettings:
    """How to reach the IAQD model (ignored by `template`)."""

    base_url: str = ""
    model: str = ""
    api_key: str | None = None  # else $OPENAI_API_KEY
    cache_dir: str | None = None  # else $AQUA_CACHE_DIR/build-iaqd
    max_attempts: int = 3
    temperature: float = 0.0
    timeout: float = 60.0
    concurrency: int = 4  # requests in flight at once (openai; a local hf model takes one)
    max_tokens: int | None = None  # longest reply in tokens (None: the backend's default, 400)
    extra: Mapping[str, Any] = field(default_factory=dict)  # e.g. the HTTP retry policy


def _maybe(name: str, value: object) -> dict[str, object]:
    return {} if value is None else {name: value}


def make_generator(name: str, settings: GeneratorSettings, bank: Bank) -> IaqdGenerator:
    """The IAQD generator called `name`."""
    if name == "template":
        return TemplateGenerator(bank)
    from aqua_tasks.build.iaqd_llm import ChatGenerator, HFChat, OpenAIChat

    if name == "openai":
        backend: Any = OpenAIChat(
            settings.base_url,
            settings.model,
            api_key=settings.api_key,
            temperature=settings.temperature,
            timeout=settings.timeout,
            connections=settings.concurrency,
            **_maybe("max_tokens", settings.max_tokens),
            **settings.extra,
        )
    elif name == "hf":
        backend = HFChat(
            settings.model, **_maybe("max_new_tokens", settings.max_tokens), **settings.extra
        )
    else:
        expected = ", ".join(GENERATORS)
        raise BuildError(f"unknown IAQD generator {name!r}; expected one of {expected}")
    concurrency = settings.concurrency if name == "openai" else 1
    return ChatGenerator(name, backend, settings.cache_dir, settings.max_attempts, concurrency)


def build_items(
    items: list[SourceItem],
    output: str | Path,
    *,
    generator: str | IaqdGenerator = "template",
    settings: GeneratorSettings = GeneratorSettings(),
    config: BuildConfig | None = None,
    source: dict[str, Any] | None = None,
    bank: Bank | None = None,
    on_item: Callable[[], None] | None = None,
) -> BuildResult:
    """Build already-read items and write `output` with its manifest beside it."""
    bank = bank or default_bank()
    made = make_generator(generator, settings, bank) if isinstance(generator, str) else None
    try:
        result = build(
            items, made or generator, bank, config or BuildConfig(), source=source, on_item=on_item
        )
    finally:
        close = getattr(made, "close", None)  # a chat generator's connections or model
        if close is not None:
            close()
    write_result(result, Path(output))
    return result


def file_source(input_path: str | Path, fields: FieldMap, limit: int | None) -> dict[str, Any]:
    """What the manifest records of a source file: name, SHA-256, fields, limit."""
    return {
        "file": Path(input_path).name,
        "sha256": sha256_file(input_path),
        "fields": dict(fields.__dict__),
        "limit": limit,
    }


def build_file(
    input_path: str | Path,
    output_dir: str | Path,
    *,
    output_name: str = MMAU_OUTPUT,
    fields: FieldMap = MMAU_FIELDS,
    limit: int | None = None,
    **options: Any,
) -> BuildResult:
    """Read a JSON/JSONL source (MMAU's fields by default), build it, write it to `output_dir`."""
    items = read_source(input_path, fields)[:limit]
    source = file_source(input_path, fields, limit)
    return build_items(items, Path(output_dir) / output_name, source=source, **options)
