import torch
import torch_mlu  # noqa: F401
from torch.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend="cncl",
        init_method="env://",
    )
    x = x.mlu(
        non_blocking=True,
    )
    device = torch.device(
        "mlu",
        local_rank,
    )
    with autocast("mlu",
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler("mlu")
