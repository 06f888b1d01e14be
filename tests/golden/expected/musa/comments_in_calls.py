"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
import torch_musa  # noqa: F401
from torch.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.amp.autocast  # mixed precision (fp16)
           ("musa"))
    scaler = torch.amp.GradScaler("musa",
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("musa:{}".format  # one device per rank (local)
              (rank))
    y = (x.musa  # move it (async)
         ())
    z = x.musa(
        # keep pinned memory (speed)
    )
    w = torch.amp.autocast("musa", enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16, device_type="musa",
)
def forward(ctx, x):
    return x
