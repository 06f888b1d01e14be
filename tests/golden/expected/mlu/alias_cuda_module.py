import torch
import torch_mlu
import torch.mlu as tc


def sync_all():
    for i in range(tc.device_count()):
        with tc.device(i):
            tc.synchronize()
    tc.empty_cache()
