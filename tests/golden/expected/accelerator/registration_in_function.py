"""Only imports torch lazily, inside a function."""


def lazy_device():
    import torch

    return torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type if torch.accelerator.is_available() else "cpu")
