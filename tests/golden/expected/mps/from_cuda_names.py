import torch
from torch import amp
from torch.cuda import Stream
from torch.mps import Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler("mps")
    with amp.autocast("mps"):
        y = model(x)
    return scaler, y, s, start, end
