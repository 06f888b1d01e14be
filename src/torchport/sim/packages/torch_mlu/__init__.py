"""Stand-in for torch_mlu on torchport's simulated device.  Importable only where `torchport sim`
or `torchport run --simulate` put this folder on sys.path; never installed."""
try:
    from torchport.sim import stand_in as _stand_in
except ModuleNotFoundError:   # an interpreter without torchport installed: use the copy this file is part of
    import sys as _sys
    from pathlib import Path as _Path

    _sys.path.append(str(_Path(__file__).resolve().parents[4]))
    from torchport.sim import stand_in as _stand_in

_stand_in(__name__, globals())
del _stand_in
