"""The one device/dtype rule every model loader uses."""

import pytest
import torch

from eval_common import devices
from eval_common.devices import resolve_device, resolve_dtype

CPU = torch.device("cpu")


@pytest.fixture
def no_accelerator(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    monkeypatch.setattr(devices, "_mps_available", lambda: False)


def test_auto_device_is_the_cpu_on_a_machine_without_accelerators(no_accelerator):
    assert resolve_device(None) == CPU
    assert resolve_device("auto") == CPU
    assert resolve_device(" AUTO ") == CPU


def test_auto_device_prefers_cuda_then_mps(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(devices, "_mps_available", lambda: True)
    assert resolve_device("auto") == torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    assert resolve_device("auto") == torch.device("mps")


def test_named_devices_are_checked_against_this_machine(no_accelerator):
    assert resolve_device("cpu") == CPU
    assert resolve_device(torch.device("cpu")) == CPU
    with pytest.raises(ValueError, match="device='cuda:1', but torch sees no CUDA device"):
        resolve_device("cuda:1")
    with pytest.raises(ValueError, match="device='mps', but MPS is not available"):
        resolve_device("mps")
    with pytest.raises(ValueError, match="device='gpu0': expected auto, cpu, cuda, cuda:N or mps"):
        resolve_device("gpu0")


def test_auto_dtype_is_float32_on_cpu_and_mps():
    assert resolve_dtype("auto", CPU) is torch.float32
    assert resolve_dtype(None, CPU) is torch.float32
    assert resolve_dtype("auto", torch.device("mps")) is torch.float32


def test_auto_dtype_on_cuda_is_bfloat16_where_supported_else_float16(monkeypatch):
    cuda = torch.device("cuda")
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: True)
    assert resolve_dtype("auto", cuda) is torch.bfloat16
    monkeypatch.setattr(torch.cuda, "is_bf16_supported", lambda: False)
    assert resolve_dtype("auto", cuda) is torch.float16


def test_named_dtypes_win_over_the_device_and_unknown_ones_are_refused():
    assert resolve_dtype("bfloat16", CPU) is torch.bfloat16
    assert resolve_dtype("Float16", CPU) is torch.float16
    assert resolve_dtype(torch.float64, CPU) is torch.float64
    with pytest.raises(ValueError, match="dtype='fp8': expected one of auto, bfloat16"):
        resolve_dtype("fp8", CPU)
