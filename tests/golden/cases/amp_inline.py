import torch


def train(model, x, opt):
    scaler = torch.cuda.amp.GradScaler(enabled=True)
    with torch.cuda.amp.autocast(True, torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("cuda", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="cuda"):
        pass
    other = torch.amp.GradScaler("cuda")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
