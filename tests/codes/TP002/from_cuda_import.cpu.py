import torch
from torch import cuda


def info():
    if cuda.is_available():
        return torch.cpu.current_device(), cuda.memory_allocated()
