import torch


def train(model, x, opt):
    scaler = torch.amp.GradScaler("mps", enabled=True)
    with torch.amp.autocast("mps", enabled=True, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("mps", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="mps"):
        pass
    other = torch.amp.GradScaler("mps")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
