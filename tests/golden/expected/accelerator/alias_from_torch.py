from torch import accelerator as cuda


def info():
    if cuda.is_available():
        return cuda.current_device_index(), cuda.memory_allocated()
    return None
