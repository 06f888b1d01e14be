import torch


def train(model, x, opt):
    scaler = torch.amp.GradScaler("xpu", enabled=True)
    with torch.amp.autocast("xpu", enabled=True, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("xpu", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="xpu"):
        pass
    other = torch.amp.GradScaler("xpu")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
