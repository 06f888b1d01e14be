"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch
    import torch_mlu

    return torch.device("mlu" if torch.mlu.is_available() else "cpu")
