import logging

try:
    import torch
    import torch_mlu  # noqa: F401
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

log = logging.getLogger(__name__)


def to_device(x):
    if HAS_TORCH and torch.mlu.is_available():
        return x.mlu()
    return x
