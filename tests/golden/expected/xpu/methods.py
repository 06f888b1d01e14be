import torch


def move(model, batch, args):
    model.xpu(args.gpu)
    model = model.xpu()
    images = batch["images"].xpu(non_blocking=True)
    target = batch["target"].xpu(args.gpu, non_blocking=True)
    extra = batch["extra"].xpu(device=args.gpu)
    pair = batch["pair"].xpu(0, True)
    on_gpu = images.is_xpu and not target.is_xpu
    movers = list(map(lambda t: t.xpu(), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == "xpu"

    def ready(self, x):
        return self.is_cuda and x.is_xpu
