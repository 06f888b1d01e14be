import torch


def train(model, x, opt):
    scaler = torch.amp.GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type, enabled=True)
    with torch.amp.autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type, enabled=True, dtype=torch.bfloat16):
        loss = model(x).sum()
    with torch.autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type, dtype=torch.float16):
        loss = loss + model(x).sum()
    with torch.autocast(device_type=(torch.accelerator.current_accelerator() or torch.device("cpu")).type):
        pass
    other = torch.amp.GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    scaler.scale(loss).backward()
    scaler.step(opt)
    scaler.update()
    return other
