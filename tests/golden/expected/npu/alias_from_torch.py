import torch_npu
from torch import npu as cuda


def info():
    if cuda.is_available():
        return cuda.current_device(), cuda.memory_allocated()
    return None
