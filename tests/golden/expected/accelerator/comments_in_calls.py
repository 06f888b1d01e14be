"""Comments holding parentheses and commas where rules add arguments: edits go into the code, never the comment."""
import torch
from torch.amp import custom_fwd


def step(model, x, rank, data):
    amp = (torch.amp.autocast  # mixed precision (fp16)
           ((torch.accelerator.current_accelerator() or torch.device("cpu")).type))
    scaler = torch.amp.GradScaler((torch.accelerator.current_accelerator() or torch.device("cpu")).type,
        init_scale=2.0 ** 16,  # the default (65536),
    )
    device = ("{}:{}".format  # one device per rank (local)
              ((torch.accelerator.current_accelerator() or torch.device("cpu")).type, rank))
    y = (x.to  # move it (async)
         ((torch.accelerator.current_accelerator() or torch.device("cpu")).type))
    z = x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type
        # keep pinned memory (speed)
    )
    w = torch.amp.autocast((torch.accelerator.current_accelerator() or torch.device("cpu")).type, enabled=(True))
    return amp, scaler, device, y, z, w


@custom_fwd(  # (cast inputs)
    cast_inputs=torch.float16, device_type=(torch.accelerator.current_accelerator() or torch.device("cpu")).type,
)
def forward(ctx, x):
    return x
