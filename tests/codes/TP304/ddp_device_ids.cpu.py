import torch
from torch.nn.parallel import DistributedDataParallel as DDP
m = DDP(m, device_ids=None, output_device=None)
