import torch
import torch_musa  # noqa: F401
from torch.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend="mccl",
        init_method="env://",
    )
    x = x.musa(
        non_blocking=True,
    )
    device = torch.device(
        "musa",
        local_rank,
    )
    with autocast("musa",
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler("musa")
