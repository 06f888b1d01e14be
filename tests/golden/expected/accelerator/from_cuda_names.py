import torch
from torch import amp, Stream, Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    with amp.autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type):
        y = model(x)
    return scaler, y, s, start, end
