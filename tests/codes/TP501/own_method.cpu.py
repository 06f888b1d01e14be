import torch
from torch import nn


class Holder:
    """Not a module: its own cuda() moves what it holds."""

    def __init__(self, t):
        self.t = t

    def cuda(self, device=None):
        self.t = self.t.to("cpu")
        return self


class Net(nn.Module):
    """Moves a plain tensor too, then the module."""

    def __init__(self):
        super().__init__()
        self.cache = torch.zeros(2)
        self.held = Holder(torch.ones(1))

    def cuda(self, device=None):
        self.held.cuda(device)
        self.cache = self.cache.to("cpu")
        return super().to("cpu")


net = Net().cuda()
held = Holder(torch.ones(1))
held = held.cuda()
layer = nn.Linear(2, 2).to("cpu")
