import torch
from torch import cuda


def info():
    if torch.mps.is_available():
        return cuda.current_device(), torch.mps.current_allocated_memory()
    return None
