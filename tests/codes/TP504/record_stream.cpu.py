import torch
s = torch.cpu.Stream()
pass
