import torch as th


def step(model, x):
    if th.xpu.is_available():
        th.xpu.set_device(0)
        n = th.xpu.device_count()
        name = th.xpu.get_device_name(0)
    th.xpu.synchronize()
    return model(x), n, name
