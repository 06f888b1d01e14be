import torch

def broken(:
    return torch.cuda.is_available()
