"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch

    return torch.device("xpu" if torch.xpu.is_available() else "cpu")
