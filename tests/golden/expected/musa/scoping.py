import functools

import torch
import torch_musa  # noqa: F401

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.musa.synchronize,
    torch.musa.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.musa import synchronize

    synchronize()


def second():
    from torch.musa import synchronize

    x = torch.ones(1).musa(torch.musa.current_device())
    synchronize()
    return x


def third():
    from torch.amp import autocast

    with autocast("musa"):
        pass


def fourth():
    from torch import autocast

    with autocast("musa"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
