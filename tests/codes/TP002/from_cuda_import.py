from torch import cuda


def info():
    if cuda.is_available():
        return cuda.current_device(), cuda.memory_allocated()
