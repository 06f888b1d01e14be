"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch
    import torch_npu  # noqa: F401

    return torch.device("npu" if torch.npu.is_available() else "cpu")
