"""torch_npu's storage formats on the simulated NPU: `torch_npu.npu_format_cast`, `npu_format_cast_`,
`get_npu_format` and `torch_npu.Format`, as bookkeeping (format ids: kb/sim/chips.toml [npu.formats]).

A tensor has the base format its rank implies (4-d NCHW, 5-d NCDHW, else ND) until a cast records another.
A cast to the format the tensor has returns the tensor itself; any other cast returns a copy that records
the format asked (the in-place cast records it on the tensor).  The data keeps PyTorch's layout: a private
format (NC1HWC0, FRACTAL_NZ, ...) is recorded, not laid out, so its padded storage size is not modelled.
"""
from __future__ import annotations

from enum import IntEnum

import torch

EXPECTED_NPU = "Expected NPU tensor, please check whether the input tensor device is correct."   # DeviceUtils.h:25-30
_ATTR = "_torchport_npu_format"


def functions(chip, device_type: str) -> dict:
    """The torch_npu top-level names for the format API of `chip`'s target."""
    table = chip.rules["formats"]
    ids = table["ids"]
    by_rank = {int(rank): ids[name] for rank, name in table["by_rank"].items()}
    Format = IntEnum("Format", ids)  # type: ignore[misc]  # noqa: N806 - the vendor's name; members: chips.toml's
    Format.__str__ = lambda self: self.name  # type: ignore[method-assign, attr-defined]  # str(): the name

    def check(tensor):
        if not isinstance(tensor, torch.Tensor) or tensor.device.type != device_type:
            raise RuntimeError(EXPECTED_NPU)

    def get_npu_format(tensor):
        check(tensor)
        return Format(getattr(tensor, _ATTR, by_rank.get(tensor.dim(), ids[table["default"]])))

    def wanted(acl_format) -> int:
        fmt = get_npu_format(acl_format) if isinstance(acl_format, torch.Tensor) else int(acl_format)
        if fmt not in ids.values():
            raise RuntimeError(f"npu_format_cast: unknown ACL format {fmt} (torch_npu.Format lists "
                               f"{', '.join(f'{n}={v}' for n, v in ids.items())})")
        return fmt

    def npu_format_cast(tensor, acl_format, customize_dtype=None, input_dtype=None):
        fmt = wanted(acl_format)
        if get_npu_format(tensor) == fmt:
            return tensor
        out = tensor.clone()
        setattr(out, _ATTR, fmt)
        return out

    def npu_format_cast_(tensor, acl_format, customize_dtype=None, input_dtype=None):
        fmt = wanted(acl_format)
        check(tensor)
        setattr(tensor, _ATTR, fmt)
        return tensor

    return {"Format": Format, "get_npu_format": get_npu_format, "npu_format_cast": npu_format_cast,
            "npu_format_cast_": npu_format_cast_}


__all__ = ["functions", "EXPECTED_NPU"]
