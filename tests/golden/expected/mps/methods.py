import torch


def move(model, batch, args):
    model.to("mps")
    model = model.to("mps")
    images = batch["images"].to("mps", non_blocking=True)
    target = batch["target"].to("mps", non_blocking=True)
    extra = batch["extra"].to(device="mps")
    pair = batch["pair"].to("mps", non_blocking=True)
    on_gpu = images.is_mps and not target.is_mps
    movers = list(map(lambda t: t.to("mps"), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == "mps"

    def ready(self, x):
        return self.is_cuda and x.is_mps
