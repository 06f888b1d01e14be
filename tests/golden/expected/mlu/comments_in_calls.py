"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
import torch_mlu  # noqa: F401
from torch.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.amp.autocast  # mixed precision (fp16)
           ("mlu"))
    scaler = torch.amp.GradScaler("mlu",
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("mlu:{}".format  # one device per rank (local)
              (rank))
    y = (x.mlu  # move it (async)
         ())
    z = x.mlu(
        # keep pinned memory (speed)
    )
    w = torch.amp.autocast("mlu", enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16, device_type="mlu",
)
def forward(ctx, x):
    return x
