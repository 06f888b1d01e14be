"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch

    return torch.device("mps" if torch.mps.is_available() else "cpu")
