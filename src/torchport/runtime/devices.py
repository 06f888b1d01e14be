"""Device arguments written for CUDA, mapped to the target device at run time.

`DeviceMap.map(value)` takes whatever PyTorch accepts as a device — "cuda", "cuda:1",
an int (CUDA's device index), a torch.device, or a dict / list of those (`map_location`,
`device_map`) — and returns the target's equivalent, or the very same object when
nothing refers to CUDA (so callers can test `is` to know whether to count).
"""
from __future__ import annotations

import re

_CUDA_STRING = re.compile(r"cuda(?::(\d+))?\Z")


class DeviceMap:
    def __init__(self, device_type: str, keep_index: bool, real_device):
        self.type = device_type          # "npu", "cpu", ...
        self.keep_index = keep_index     # False for cpu: "cuda:1" -> "cpu"
        self.real_device = real_device   # the original torch.device class
        self.plain: set = set()          # device objects and strings seen not to name CUDA (the hot path's test)

    def name(self, index=None) -> str:
        """The target device string for a CUDA index (None: the current device)."""
        if index is None or not self.keep_index or not isinstance(index, int):
            return self.type
        return f"{self.type}:{index}"

    def map(self, value):
        """The target's device for `value`, or `value` itself when it does not name CUDA."""
        if isinstance(value, str):
            m = _CUDA_STRING.match(value)
            return self.name(int(m.group(1)) if m.group(1) else None) if m else value
        if isinstance(value, bool):
            return value
        if isinstance(value, int):
            return self.name(value)
        if isinstance(value, self.real_device):
            if value.type == "cuda":
                return self.real_device(self.name(value.index))
            return value
        if isinstance(value, dict):
            mapped = {k: self.map(v) for k, v in value.items()}
            return mapped if any(mapped[k] is not value[k] for k in value) else value
        if isinstance(value, (list, tuple)):
            mapped = [self.map(v) for v in value]
            return type(value)(mapped) if any(a is not b for a, b in zip(mapped, value)) else value
        return value

    def map_device_arg(self, value):
        """Like `map`, for an argument that is a device only when it is a str, int or torch.device.
        Device objects and strings that do not name CUDA are remembered in `plain`: a hot loop's
        `.to(device)` then costs one set lookup (reading `device.type` costs ~0.2 us)."""
        kind = type(value)
        if kind is self.real_device:  # the common case first: a device object, usually not CUDA
            if value.type != "cuda":
                if len(self.plain) < 256:
                    self.plain.add(value)
                return value
            return self.real_device(self.name(value.index))
        if kind is str or kind is int:
            new = self.map(value)
            if new is value and kind is str and len(self.plain) < 256:
                self.plain.add(value)
            return new
        return value

    def location(self, location: str) -> str:
        """A storage location in a checkpoint ("cuda:0") -> where to restore it."""
        return self.map(location) if isinstance(location, str) else location
