"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
from torch.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.amp.autocast  # mixed precision (fp16)
           ("xpu"))
    scaler = torch.amp.GradScaler("xpu",
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("xpu:{}".format  # one device per rank (local)
              (rank))
    y = (x.xpu  # move it (async)
         ())
    z = x.xpu(
        # keep pinned memory (speed)
    )
    w = torch.amp.autocast("xpu", enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16, device_type="xpu",
)
def forward(ctx, x):
    return x
