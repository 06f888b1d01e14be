"""Stand-in for torch_npu on torchport's simulated device.  Importable only where `torchport sim`
or `torchport run --simulate` put this folder on sys.path; never installed."""
from torchport.sim import stand_in as _stand_in

_stand_in(__name__, globals())
del _stand_in
