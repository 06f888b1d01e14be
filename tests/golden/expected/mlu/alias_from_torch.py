import torch_mlu  # noqa: F401
from torch import mlu as cuda


def info():
    if cuda.is_available():
        return cuda.current_device(), cuda.memory_allocated()
    return None
