import torch
import torch_npu  # noqa: F401
from torch.npu.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend="hccl",
        init_method="env://",
    )
    x = x.npu(
        non_blocking=True,
    )
    device = torch.device(
        "npu",
        local_rank,
    )
    with autocast(
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler()
