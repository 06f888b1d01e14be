"""Built-in Python conversion rules, one module per concern.

Importing this package registers every rule; `finalize` rules run in import
order after the walk, so `imports` (which adds imports for what the others
changed) comes last.
"""
from . import api, methods, devices, distributed, messages, host, env, profiler, reported, imports  # noqa: F401
