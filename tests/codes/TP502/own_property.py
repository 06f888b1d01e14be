import torch
from torch import nn


class Rotary(nn.Module):
    """ring-attention-pytorch's RingRotaryEmbedding: an is_cuda property of its own, asking its buffer."""

    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.ones(4))

    @property
    def is_cuda(self):
        return self.inv_freq.is_cuda

    def forward(self, n):
        buckets = 1 if self.is_cuda else 4
        return torch.arange(n // buckets, device=self.inv_freq.device)


class Scaled(Rotary):
    on_gpu = property(lambda self: self.is_cuda)


class Flag:
    is_cuda = False

    @classmethod
    def ask(cls, x):
        return cls.is_cuda or x.is_cuda


rotary = Rotary().cuda()
print(rotary.is_cuda, Scaled().is_cuda, Flag.is_cuda, rotary.inv_freq.is_cuda)
