import functools

import torch
import torch_npu  # noqa: F401

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.npu.synchronize,
    torch.npu.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.npu import synchronize

    synchronize()


def second():
    from torch.npu import synchronize

    x = torch.ones(1).npu(torch.npu.current_device())
    synchronize()
    return x


def third():
    from torch.npu.amp import autocast

    with autocast():
        pass


def fourth():
    from torch import autocast

    with autocast("npu"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
