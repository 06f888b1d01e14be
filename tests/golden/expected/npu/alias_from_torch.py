import torch_npu  # noqa: F401
from torch import npu as cuda


def info():
    if cuda.is_available():
        return cuda.current_device(), cuda.memory_allocated()
    return None
