"""Diagnosis: `torchport doctor` (is this machine set up for the target?) and `torchport explain`
(what does this error mean?).  Neither imports torch."""
from .checks import run_checks
from .probe import FAIL, OK, SKIP, WARN, Check, Probe

__all__ = ["run_checks", "Probe", "Check", "OK", "WARN", "FAIL", "SKIP"]
