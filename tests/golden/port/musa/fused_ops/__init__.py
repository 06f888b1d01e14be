"""Python side of the example extension."""
import torch

from . import _C


def bias_gelu(x, bias):
    """GELU(x + bias) in one kernel."""
    return _C.bias_gelu(x, bias)


def row_sum(x):
    return torch.ops.fused_ops.row_sum(x)
