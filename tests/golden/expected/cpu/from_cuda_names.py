import torch
from torch import amp
from torch.cpu import Stream, Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler("cpu")
    with amp.autocast("cpu"):
        y = model(x)
    return scaler, y, s, start, end
