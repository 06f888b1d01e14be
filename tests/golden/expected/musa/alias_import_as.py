import torch as th
import torch_musa  # noqa: F401


def step(model, x):
    if th.musa.is_available():
        th.musa.set_device(0)
        n = th.musa.device_count()
        name = th.musa.get_device_name(0)
    th.musa.synchronize()
    return model(x), n, name
