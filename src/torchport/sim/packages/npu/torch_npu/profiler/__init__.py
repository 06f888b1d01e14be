"""Stand-in for torch_npu.profiler on torchport's simulated device: it imports (projects import it at the top
of a file), and each name in it is not modelled: using one raises NotModelled (nothing is timed like the NPU)."""
from torchport.sim.namespace import _Unmodelled


def __getattr__(name):   # noqa: N807 - module-level attribute hook
    if name.startswith("__"):
        raise AttributeError(name)
    return _Unmodelled(f"torch_npu.profiler.{name}")
