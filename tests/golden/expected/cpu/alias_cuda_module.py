import torch
import torch.cuda as tc


def sync_all():
    for i in range(torch.cpu.device_count()):
        with tc.device(i):
            torch.cpu.synchronize()
    tc.empty_cache()
