import functools

import torch

HANDLERS = {}


def register(*fns):
    def wrap(f):
        HANDLERS.update({fn: f for fn in fns})
        return f
    return wrap


@register(
    torch.accelerator.synchronize,
    torch.accelerator.empty_cache,
)
def handler(*args):
    return args


def first():
    from torch.accelerator import synchronize

    if torch.accelerator.is_available(): synchronize()


def second():
    from torch.accelerator import synchronize

    x = torch.ones(1).to(torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type, torch.accelerator.current_device_index()))
    if torch.accelerator.is_available(): synchronize()
    return x


def third():
    from torch.amp import autocast

    with autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type):
        pass


def fourth():
    from torch import autocast

    with autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type):
        pass


@functools.lru_cache()
def fifth():
    return "cuda:0"
