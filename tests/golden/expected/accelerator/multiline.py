import torch
from torch.amp import (  # grouped import
    autocast,
    GradScaler,
)


def run(model, x, local_rank):
    torch.distributed.init_process_group(
        backend=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")),
        init_method="env://",
    )
    x = x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type,
        non_blocking=True,
    )
    device = torch.device(
        (torch.accelerator.current_accelerator() or torch.device("cpu")).type,
        local_rank,
    )
    with autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type,
        enabled=True,
    ):
        y = model(x)
    return y, device, GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
