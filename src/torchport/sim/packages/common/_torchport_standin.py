"""Shared body of the stand-in vendor packages (packages/<target>/<package>; this folder and the simulated
target's are on sys.path only under `torchport sim` or `torchport run --simulate`)."""
try:
    from torchport.sim import stand_in
except ModuleNotFoundError:   # an interpreter without torchport installed: use the copy this file is part of
    import sys
    from pathlib import Path

    sys.path.append(str(Path(__file__).resolve().parents[4]))
    from torchport.sim import stand_in

__all__ = ["stand_in"]
