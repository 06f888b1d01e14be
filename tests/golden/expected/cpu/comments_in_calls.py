"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
from torch.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.amp.autocast  # mixed precision (fp16)
           ("cpu"))
    scaler = torch.amp.GradScaler("cpu",
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("cpu"  # one device per rank (local)
              )
    y = (x.to  # move it (async)
         ("cpu"))
    z = x.to("cpu"
        # keep pinned memory (speed)
    )
    w = torch.amp.autocast("cpu", enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16, device_type="cpu",
)
def forward(ctx, x):
    return x
