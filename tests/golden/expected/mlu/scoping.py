import functools

import torch
import torch_mlu  # noqa: F401

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.mlu.synchronize,
    torch.mlu.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.mlu import synchronize

    synchronize()


def second():
    from torch.mlu import synchronize

    x = torch.ones(1).mlu(torch.mlu.current_device())
    synchronize()
    return x


def third():
    from torch.amp import autocast

    with autocast("mlu"):
        pass


def fourth():
    from torch import autocast

    with autocast("mlu"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
