import torch
import torch.cuda as tc


def sync_all():
    for i in range(torch.accelerator.device_count()):
        with tc.device(i):
            if torch.accelerator.is_available(): torch.accelerator.synchronize()
    if torch.accelerator.is_available(): torch.accelerator.empty_cache()
