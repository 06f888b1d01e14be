import torch_musa  # noqa: F401
from torch import musa as cuda


def info():
    if cuda.is_available():
        return cuda.current_device(), cuda.memory_allocated()
    return None
