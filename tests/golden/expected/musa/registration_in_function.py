"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch
    import torch_musa  # noqa: F401

    return torch.device("musa" if torch.musa.is_available() else "cpu")
