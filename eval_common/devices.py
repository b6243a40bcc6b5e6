"""Where models run and in which precision: one rule for every model this package loads.

`auto` device: CUDA if torch sees one, else Apple MPS if available, else CPU.
`auto` dtype: bfloat16 on CUDA devices that support it, float16 on older CUDA devices,
float32 on CPU and MPS (CPU results stay bit-for-bit those of a float32 run; MPS kernels
are not trusted with half precision here). Name a dtype explicitly to override, e.g.
`float32` to train on a GPU without bfloat16.
"""

from __future__ import annotations

import torch

DTYPES = ("auto", "bfloat16", "float16", "float32")


def _mps_available() -> bool:
    backend = getattr(torch.backends, "mps", None)
    return bool(backend is not None and backend.is_available())


def resolve_device(name: str | torch.device | None = None) -> torch.device:
    """A torch device for `auto`/None, `cpu`, `cuda`, `cuda:N` or `mps`; ValueError if absent."""
    if isinstance(name, torch.device):
        text = str(name)
    else:
        text = str(name if name is not None else "auto").strip().lower()
    if text == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda")
        if _mps_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(text)
    except (RuntimeError, ValueError):
        raise ValueError(f"device={name!r}: expected auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device={name!r}, but torch sees no CUDA device here")
    if device.type == "mps" and not _mps_available():
        raise ValueError(f"device={name!r}, but MPS is not available here")
    return device


def resolve_dtype(name: str | torch.dtype | None, device: torch.device) -> torch.dtype:
    """A torch dtype for `auto`/None, `bfloat16`, `float16` or `float32` on `device`."""
    if isinstance(name, torch.dtype):
        return name
    text = str(name if name is not None else "auto").strip().lower()
    if text not in DTYPES:
        raise ValueError(f"dtype={name!r}: expected one of {', '.join(DTYPES)}")
    if text != "auto":
        return getattr(torch, text)
    if device.type == "cuda":
        return torch.bfloat16 if torch.cuda.is_bf16_supported() else torch.float16
    return torch.float32


def peak_memory_mb(device: torch.device | None = None) -> dict[str, float]:
    """Peak resident memory of this process (and peak CUDA allocation on a CUDA device), MB."""
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    peaks = {"peak_rss_mb": round(peak / (2**20 if sys.platform == "darwin" else 2**10), 1)}
    if device is not None and device.type == "cuda":
        peaks["peak_cuda_mb"] = round(torch.cuda.max_memory_allocated(device) / 2**20, 1)
    return peaks
