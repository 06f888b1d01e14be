import torch
import torch_musa  # noqa: F401


def f(x):
    """Move to cuda."""
    if torch.musa.is_available():
        x = x.musa()
    return x, torch.device("musa:0")
