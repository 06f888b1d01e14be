import torch
import torch_musa  # noqa: F401


def move(model, batch, args):
    model.musa(args.gpu)
    model = model.musa()
    images = batch["images"].musa(non_blocking=True)
    target = batch["target"].musa(args.gpu, non_blocking=True)
    extra = batch["extra"].musa(device=args.gpu)
    pair = batch["pair"].musa(0, True)
    on_gpu = images.is_musa and not target.is_musa
    movers = list(map(lambda t: t.musa(), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == "musa"

    def ready(self, x):
        return self.is_cuda and x.is_musa
