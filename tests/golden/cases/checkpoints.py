"""Loading checkpoints written on a CUDA machine: torch.load without map_location gets one (TP211)."""
import torch
import torch.serialization
from torch import load as load_checkpoint


def resume(args, model, optimizer):
    checkpoint = torch.load(args.resume)
    model.load_state_dict(checkpoint["state_dict"])
    optimizer.load_state_dict(torch.load(args.optim, weights_only=True))
    rng = torch.load(
        args.rng,  # saved with torch.get_rng_state()
    )
    torch.set_rng_state(rng)
    extra = load_checkpoint((args.extra),)
    legacy = torch.serialization.load(args.legacy)
    kept = torch.load(args.resume, map_location="cuda:0")   # has one: only the device changes
    positional = torch.load(args.resume, "cpu")             # map_location given positionally
    options = torch.load(**args.load_options)                # cannot tell: left
    return checkpoint, extra, legacy, kept, positional, options
