import functools

import torch

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.mps.synchronize,
    torch.mps.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.mps import synchronize

    synchronize()


def second():
    from torch.mps import synchronize

    x = torch.ones(1).to("mps")
    synchronize()
    return x


def third():
    from torch.amp import autocast

    with autocast("mps"):
        pass


def fourth():
    from torch import autocast

    with autocast("mps"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
