import torch
import torch_musa  # noqa: F401
import torch.musa as tc


def sync_all():
    for i in range(tc.device_count()):
        with tc.device(i):
            tc.synchronize()
    tc.empty_cache()
