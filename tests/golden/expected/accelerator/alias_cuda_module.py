import torch
import torch.cuda as tc


def sync_all():
    for i in range(torch.accelerator.device_count()):
        with tc.device(i):
            torch.accelerator.synchronize()
    torch.accelerator.empty_cache()
