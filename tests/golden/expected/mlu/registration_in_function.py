"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch
    import torch_mlu  # noqa: F401

    return torch.device("mlu" if torch.mlu.is_available() else "cpu")
