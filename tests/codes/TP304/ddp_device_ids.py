import torch
from torch.nn.parallel import DistributedDataParallel as DDP
m = DDP(m, device_ids=[rank], output_device=rank)
