import torch
import torch_mlu  # noqa: F401


def train(model, x, opt):
    scaler = torch.amp.GradScaler("mlu", enabled=True)
    with torch.amp.autocast("mlu", enabled=True, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("mlu", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="mlu"):
        pass
    other = torch.amp.GradScaler("mlu")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
