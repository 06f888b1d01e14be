import functools

import torch

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.cpu.synchronize,
    torch.cuda.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.cpu import synchronize

    synchronize()


def second():
    from torch.cpu import synchronize

    x = torch.ones(1).to("cpu")
    synchronize()
    return x


def third():
    from torch.amp import autocast

    with autocast("cpu"):
        pass


def fourth():
    from torch import autocast

    with autocast("cpu"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
