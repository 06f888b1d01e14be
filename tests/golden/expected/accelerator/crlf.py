import torch


def f(x):
    """Move to cuda."""
    if torch.accelerator.is_available():
        x = x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    return x, torch.device(f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:0")
