import functools

import torch

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.xpu.synchronize,
    torch.xpu.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.xpu import synchronize

    synchronize()


def second():
    from torch.xpu import synchronize

    x = torch.ones(1).xpu(torch.xpu.current_device())
    synchronize()
    return x


def third():
    from torch.amp import autocast

    with autocast("xpu"):
        pass


def fourth():
    from torch import autocast

    with autocast("xpu"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
