import torch
from torch.cuda.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend="nccl",
        init_method="env://",
    )
    x = x.cuda(
        non_blocking=True,
    )
    device = torch.device(
        "cuda",
        local_rank,
    )
    with autocast(
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler()
