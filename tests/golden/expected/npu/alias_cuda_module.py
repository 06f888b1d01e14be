import torch
import torch_npu  # noqa: F401
import torch.npu as tc


def sync_all():
    for i in range(tc.device_count()):
        with tc.device(i):
            tc.synchronize()
    tc.empty_cache()
