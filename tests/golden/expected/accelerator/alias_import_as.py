import torch as th


def step(model, x):
    if th.cuda.is_available():
        th.accelerator.set_device_index(0)
        n = th.accelerator.device_count()
        name = th.cuda.get_device_name(0)
    if th.accelerator.is_available(): th.accelerator.synchronize()
    return model(x), n, name
