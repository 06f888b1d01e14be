"""Diagnosis: `torchport doctor` (is this machine set up for the target?) and `torchport explain`
(what does this error mean?).  Neither imports torch."""
from .checks import FAIL, OK, SKIP, WARN, Check, Probe, run_checks

__all__ = ["run_checks", "Probe", "Check", "OK", "WARN", "FAIL", "SKIP"]
