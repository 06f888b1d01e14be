import torch as th


def step(model, x):
    if th.cuda.is_available():
        th.cuda.set_device(0)
        n = th.cuda.device_count()
        name = th.cuda.get_device_name(0)
    th.cuda.synchronize()
    return model(x), n, name
