import functools

import torch

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.cuda.synchronize,
    torch.cuda.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.cuda import synchronize

    synchronize()


def second():
    from torch.cuda import synchronize

    x = torch.ones(1).cuda(torch.cuda.current_device())
    synchronize()
    return x


def third():
    from torch.cuda.amp import autocast

    with autocast():
        pass


def fourth():
    from torch import autocast

    with autocast("cuda"):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
