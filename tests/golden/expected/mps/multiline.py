import torch
from torch.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend="gloo",
        init_method="env://",
    )
    x = x.to("mps",
        non_blocking=True,
    )
    device = torch.device(
        "mps",
        local_rank,
    )
    with autocast("mps",
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler("mps")
