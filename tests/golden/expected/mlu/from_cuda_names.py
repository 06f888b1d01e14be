import torch
import torch_mlu  # noqa: F401
from torch import amp
from torch.mlu import Stream, Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler("mlu")
    with amp.autocast("mlu"):
        y = model(x)
    return scaler, y, s, start, end
