from torch import xpu as cuda


def info():
    if cuda.is_available():
        return cuda.current_device(), cuda.memory_allocated()
    return None
