import torch


def move(model, batch, args):
    model.to("cpu")
    model = model.to("cpu")
    images = batch["images"].to("cpu", non_blocking=True)
    target = batch["target"].to("cpu", non_blocking=True)
    extra = batch["extra"].to(device="cpu")
    pair = batch["pair"].to("cpu", non_blocking=True)
    on_gpu = images.is_cuda and not target.is_cuda
    movers = list(map(lambda t: t.to("cpu"), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == "cuda"

    def ready(self, x):
        return self.is_cuda and x.is_cuda
