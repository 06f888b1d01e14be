"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
from torch.cuda.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.cuda.amp.autocast  # mixed precision (fp16)
           ())
    scaler = torch.cuda.amp.GradScaler(
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("cuda:{}".format  # one device per rank (local)
              (rank))
    y = (x.cuda  # move it (async)
         ())
    z = x.cuda(
        # keep pinned memory (speed)
    )
    w = torch.cuda.amp.autocast(enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16,
)
def forward(ctx, x):
    return x
