import logging

try:
    import torch
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

log = logging.getLogger(__name__)


def to_device(x):
    if HAS_TORCH and torch.accelerator.is_available():
        return x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    return x
