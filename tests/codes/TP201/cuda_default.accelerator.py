import torch
from torch.amp import GradScaler
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

# pytorch-ignite's examples: the device is left to its default, "cuda"
scaler = GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type, enabled=True)
scaler2 = torch.amp.GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
fsdp_scaler = ShardedGradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type, init_scale=2.0**10)
with torch.autograd.graph.save_on_cpu(True):
    pass
given = GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type, enabled=False)
