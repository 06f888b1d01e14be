import torch
from torch.amp import autocast, GradScaler, custom_fwd, custom_bwd


class MyFn(torch.autograd.Function):
    @staticmethod
    @custom_fwd(device_type=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    def forward(ctx, x):
        return x * 2

    @staticmethod
    @custom_bwd(device_type=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    def backward(ctx, g):
        return g * 2


class Cast(torch.autograd.Function):
    @staticmethod
    @custom_fwd(cast_inputs=torch.float32, device_type=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    def forward(ctx, x):
        return x


def train(model, x, enabled):
    scaler = GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type, init_scale=2.0 ** 10)
    with autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type, enabled=enabled):
        loss = model(x).sum()
    scaler.scale(loss).backward()
    return scaler
