"""Loading checkpoints written on a CUDA machine: torch.load without map_location gets one (TP211)."""
import torch
import torch.serialization
from torch import load as load_checkpoint


def resume(args, model, optimizer):
    checkpoint = torch.load(args.resume, map_location="cpu")
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(torch.load(args.optim, weights_only=True, map_location="cpu"))
    rng = torch.load(
        args.rng,  # saved with torch.get_rng_state()
        map_location="cpu",
    )
    torch.set_rng_state(rng)
    extra = load_checkpoint((args.extra), map_location="cpu")
    legacy = torch.serialization.load(args.legacy, map_location="cpu")
    kept = torch.load(args.resume, map_location="xpu:0")   # has one: only the device changes
    positional = torch.load(args.resume, "cpu")             # map_location given positionally
    options = torch.load(**args.load_options)                # cannot tell: left
    return checkpoint, extra, legacy, kept, positional, options
