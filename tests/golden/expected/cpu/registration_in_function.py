"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch

    return torch.device("cpu" if torch.cuda.is_available() else "cpu")
