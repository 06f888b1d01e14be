import torch
import torch_npu  # noqa: F401
from torch.amp import GradScaler
from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler

# pytorch-ignite's examples: the device is left to its default, "cuda"
scaler = GradScaler("npu", enabled=True)
scaler2 = torch.amp.GradScaler("npu")
fsdp_scaler = ShardedGradScaler("npu", init_scale=2.0**10)
with torch.autograd.graph.save_on_cpu(True, device_type="npu"):
    pass
given = GradScaler("npu", enabled=False)
