import torch
import torch_npu  # noqa: F401
from torch.npu import amp, Stream, Event


def run(model, x):
    s = Stream()
    start, end = Event(enable_timing=True), Event(enable_timing=True)
    scaler = amp.GradScaler()
    with amp.autocast():
        y = model(x)
    return scaler, y, s, start, end
