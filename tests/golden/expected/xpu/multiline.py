import torch
from torch.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend="xccl",
        init_method="env://",
    )
    x = x.xpu(
        non_blocking=True,
    )
    device = torch.device(
        "xpu",
        local_rank,
    )
    with autocast("xpu",
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler("xpu")
