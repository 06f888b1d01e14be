import torch
import torch_npu  # noqa: F401


def train(model, x, opt):
    scaler = torch.npu.amp.GradScaler(enabled=True)
    with torch.npu.amp.autocast(True, torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("npu", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="npu"):
        pass
    other = torch.amp.GradScaler("npu")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
