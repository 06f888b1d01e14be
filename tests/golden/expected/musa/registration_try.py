import logging

try:
    import torch
    import torch_musa  # noqa: F401
    HAS_TORCH = True
except ImportError:  # pragma: no cover
    torch = None
    HAS_TORCH = False

log = logging.getLogger(__name__)


def to_device(x):
    if HAS_TORCH and torch.musa.is_available():
        return x.musa()
    return x
