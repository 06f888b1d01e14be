import torch
assert torch.cuda.is_available()
