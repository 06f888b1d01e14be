"""Stand-in for torch_mlu on torchport's simulated device.  Importable only where `torchport sim`
or `torchport run --simulate` put this folder on sys.path; never installed."""
from _torchport_standin import stand_in

stand_in(__name__, globals())
del stand_in
