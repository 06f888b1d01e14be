import torch
import torch_mlu  # noqa: F401


def f(x):
    """Move to cuda."""
    if torch.mlu.is_available():
        x = x.mlu()
    return x, torch.device("mlu:0")
