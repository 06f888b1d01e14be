"""torchport: move CUDA PyTorch projects to other accelerators.

The static tools (convert) never import torch; runtime tools do.
"""
__version__ = "0.1.0"


def convert(path, target, **options):
    """Convert a file or directory for `target`; see torchport.convert.api.convert."""
    from .convert.api import convert as _convert

    return _convert(path, target, **options)


__all__ = ["convert", "__version__"]
