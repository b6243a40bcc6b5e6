"""What a run was made of: data file hashes, variant, prompt, extractor and package versions."""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from aqua_tasks.core.extract import EXTRACTOR_VERSIONS
from aqua_tasks.core.extract.fallback import FALLBACK_PROMPT_VERSION, fallback_model
from aqua_tasks.core.prompts import PROMPT_TEMPLATES

DISTRIBUTION = "aqua-bench-eval"
MANIFEST_FIELDS: tuple[str, ...] = (
    "data_file",
    "data_sha256",
    "track",
    "variant",
    "prompt_style",
    "prompt_sha256",
    "extractor",
    "extractor_version",
    "package_version",
)
# Recorded only for the extractor aqua-rules+llm: which model read what the rules left
# unparsed, asked with which prompt. A fallback run's docs keep them too (and `fallback`, its
# client settings), so its samples alone say how they were read.
FALLBACK_MANIFEST_FIELDS: tuple[str, ...] = ("fallback_model", "fallback_prompt_version")
# The manifest fields every doc keeps, since scoring and reading need them per item; the rest
# are recorded once per task in lm-eval's results (`configs.<task>.metadata.aqua_manifest`),
# not repeated on each of a samples file's lines.
DOC_FIELDS: tuple[str, ...] = ("track", "variant", "prompt_style", "extractor")


def sha256_text(text: str) -> str:
    """Hex SHA-256 of a text (UTF-8)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes."""
    digest = hashlib.sha256()
    with Path(path).open("rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def package_version() -> str:
    """Installed version of this package ('unknown' when run from an uninstalled tree)."""
    try:
        return version(DISTRIBUTION)
    except PackageNotFoundError:
        return "unknown"


def run_manifest(
    *,
    data_file: Path,
    track: str,
    variant: str,
    prompt_style: str,
    extractor: str,
    fallback: Mapping | None = None,
) -> dict[str, str]:
    """The manifest fields shared by every item of one task run (`fallback`: its settings)."""
    recorded = {}
    if fallback:
        recorded = {
            "fallback_model": fallback_model(fallback),
            "fallback_prompt_version": FALLBACK_PROMPT_VERSION,
        }
    return {
        "data_file": data_file.name,
        "data_sha256": sha256_file(data_file),
        "track": track,
        "variant": variant,
        "prompt_style": prompt_style,
        "prompt_sha256": sha256_text(PROMPT_TEMPLATES[prompt_style]),
        "extractor": extractor,
        "extractor_version": EXTRACTOR_VERSIONS[extractor],
        "package_version": package_version(),
        **recorded,
    }
