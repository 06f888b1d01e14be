import torch
import torch_musa  # noqa: F401


def train(model, x, opt):
    scaler = torch.amp.GradScaler("musa", enabled=True)
    with torch.amp.autocast("musa", enabled=True, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast("musa", dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type="musa"):
        pass
    other = torch.amp.GradScaler("musa")
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
