import torch as th


def step(model, x):
    if th.cuda.is_available():
        th.cpu.set_device(0)
        n = th.cuda.device_count()
        name = th.cuda.get_device_name(0)
    th.cpu.synchronize()
    return model(x), n, name
