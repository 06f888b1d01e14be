"""torchport: move CUDA PyTorch projects to other accelerators.

The static tools (convert) never import torch; runtime tools do.
"""
from .core.version import __version__


def convert(path, target, output=None, **options):
    """Convert a file or directory for `target`; see torchport.converter.api.convert."""
    from .converter.api import convert as _convert

    return _convert(path, target, output, **options)


__all__ = ["convert", "__version__"]
