"""The vendor's data-parallel copies (DataParallel's scatter, gather and broadcast), on the simulated device.

torch.nn.parallel.comm calls `torch._C._scatter`, `_gather`, `_broadcast_coalesced`...  CPU torch has none of
them.  A vendor that registers its own in the module kb/sim/chips.toml names (`[<target>.data_parallel]`:
torch_npu puts them in torch._C when it is imported) gets them here, as plain copies between simulated devices;
one that registers them elsewhere (torch_musa in its own torch_musa._MUSAC), or not at all, leaves DataParallel
failing as it does on that vendor's hardware.  The copies work on any device: `torchport run` uses them where a
target's stack has none (runtime/patches.py `patch_data_parallel`).
"""
from __future__ import annotations

import importlib

import torch


def _on(device_type: str, index) -> torch.device:
    return torch.device("cpu") if index == -1 else torch.device(device_type, index)


def functions(device_type: str) -> dict:
    """{name: function} with the signatures of torch._C's CUDA versions (torch/csrc/cuda/python_comm.cpp)."""
    def broadcast(tensor, devices):
        return [tensor if tensor.device == _on(device_type, d) else tensor.to(_on(device_type, d)) for d in devices]

    def broadcast_out(tensor, out):
        for o in out:
            o.copy_(tensor)
        return out

    def broadcast_coalesced(tensors, devices, buffer_size):
        return [[t if t.device == _on(device_type, d) else t.to(_on(device_type, d)) for t in tensors]
                for d in devices]

    def scatter(tensor, devices, chunk_sizes, dim, streams):
        parts = tensor.split(list(chunk_sizes), dim) if chunk_sizes else tensor.chunk(len(devices), dim)
        return tuple(p.contiguous().to(_on(device_type, d)) for p, d in zip(parts, devices))

    def scatter_out(tensor, out, dim, streams):
        parts = tensor.split([o.size(dim) for o in out], dim)
        for o, p in zip(out, parts):
            o.copy_(p)
        return out

    def gather(tensors, dim, destination_index):
        where = _on(device_type, destination_index) if destination_index is not None else tensors[0].device
        return torch.cat([t.to(where) for t in tensors], dim)

    def gather_out(tensors, out, dim):
        return torch.cat([t.to(out.device) for t in tensors], dim, out=out)

    return {"_broadcast": broadcast, "_broadcast_out": broadcast_out, "_broadcast_coalesced": broadcast_coalesced,
            "_scatter": scatter, "_scatter_out": scatter_out, "_gather": gather, "_gather_out": gather_out}


def register(chip, device_type: str) -> None:
    """Put the vendor's data-parallel functions where chips.toml says it does (nothing when it names none)."""
    rule = chip.rules.get("data_parallel")
    if not rule:
        return
    module = importlib.import_module(rule["module"]) if rule["module"] == "torch._C" else None
    if module is None:    # registered in the vendor's own extension module: torch.nn.parallel does not see them
        return
    for name, fn in functions(device_type).items():
        if name in rule["names"] and not hasattr(module, name):
            setattr(module, name, fn)
