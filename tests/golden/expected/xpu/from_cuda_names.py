import torch
from torch import amp
from torch.xpu import Stream, Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler("xpu")
    with amp.autocast("xpu"):
        y = model(x)
    return scaler, y, s, start, end
