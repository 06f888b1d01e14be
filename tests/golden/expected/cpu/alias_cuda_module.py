import torch
import torch.cuda as tc


def sync_all():
    for i in range(tc.device_count()):
        with tc.device(i):
            torch.cpu.synchronize()
    tc.empty_cache()
