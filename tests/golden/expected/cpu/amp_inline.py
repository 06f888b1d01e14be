import torch


def train(model, x, opt):
    scaler = torch.amp.GradScaler("cpu", enabled=True)
    with torch.amp.autocast("cpu", enabled=True, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("cpu", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="cpu"):
        pass
    other = torch.amp.GradScaler("cpu")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
