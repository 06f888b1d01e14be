"""Profiling: `Profiler` (a torch.profiler wrapper writing trace.json, ops.csv, summary.md,
profile.json), `profile_script` (what `torchport profile -- python train.py` runs), `steps` (what a
step of that run is: an optimizer.step(), a call of --step-fn, a wall-clock window) and
`torchport profile diff A B` (two profiles per op and per step, with a chart).  Imports torch.
"""
from .profiler import Profiler
from .script import ProfileRequest, profile_script

__all__ = ["ProfileRequest", "Profiler", "profile_script"]
