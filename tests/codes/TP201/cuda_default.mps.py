import torch
from torch.amp import GradScaler
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

# pytorch-ignite's examples: the device is left to its default, "cuda"
scaler = GradScaler("mps", enabled=True)
scaler2 = torch.amp.GradScaler("mps")
fsdp_scaler = ShardedGradScaler(init_scale=2.0**10)
with torch.autograd.graph.save_on_cpu(True, device_type="mps"):
    pass
given = GradScaler("mps", enabled=False)
