import torch as th


def step(model, x):
    if th.cuda.is_available():
        th.cuda.set_device(0)
        n = th.mps.device_count()
        name = th.cuda.get_device_name(0)
    th.mps.synchronize()
    return model(x), n, name
