"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
import torch_npu  # noqa: F401
from torch.npu.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.npu.amp.autocast  # mixed precision (fp16)
           ())
    scaler = torch.npu.amp.GradScaler(
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("npu:{}".format  # one device per rank (local)
              (rank))
    y = (x.npu  # move it (async)
         ())
    z = x.npu(
        # keep pinned memory (speed)
    )
    w = torch.npu.amp.autocast(enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16,
)
def forward(ctx, x):
    return x
