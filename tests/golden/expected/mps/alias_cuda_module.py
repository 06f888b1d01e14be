import torch
import torch.cuda as tc


def sync_all():
    for i in range(torch.mps.device_count()):
        with tc.device(i):
            torch.mps.synchronize()
    torch.mps.empty_cache()
