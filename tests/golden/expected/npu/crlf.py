import torch
import torch_npu  # noqa: F401


def f(x):
    """Move to cuda."""
    if torch.npu.is_available():
        x = x.npu()
    return x, torch.device("npu:0")
