import torch as th
import torch_mlu  # noqa: F401


def step(model, x):
    if th.mlu.is_available():
        th.mlu.set_device(0)
        n = th.mlu.device_count()
        name = th.mlu.get_device_name(0)
    th.mlu.synchronize()
    return model(x), n, name
