import torch
import torch_musa  # noqa: F401
from torch import amp
from torch.musa import Stream, Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler("musa")
    with amp.autocast("musa"):
        y = model(x)
    return scaler, y, s, start, end
