"""torchport: move CUDA PyTorch projects to other accelerators.

`torchport.convert(...)` converts a project as `torchport convert` does; `torchport.api` has analyze, check and
port_ext too.  The static tools never import torch; the run-time ones do.
"""
from .core.version import __version__


def convert(path, target, output=None, **options):
    """Convert a file or directory for `target` and write the reports; see torchport.commands.convert.convert."""
    from .api import convert as run

    return run(path, target, output, **options)


__all__ = ["convert", "__version__"]
