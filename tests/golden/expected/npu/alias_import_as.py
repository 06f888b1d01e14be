import torch as th
import torch_npu  # noqa: F401


def step(model, x):
    if th.npu.is_available():
        th.npu.set_device(0)
        n = th.npu.device_count()
        name = th.npu.get_device_name(0)
    th.npu.synchronize()
    return model(x), n, name
