import torch
import torch_mlu  # noqa: F401


def move(model, batch, args):
    model.mlu(args.gpu)
    model = model.mlu()
    images = batch["images"].mlu(non_blocking=True)
    target = batch["target"].mlu(args.gpu, non_blocking=True)
    extra = batch["extra"].mlu(device=args.gpu)
    pair = batch["pair"].mlu(0, True)
    on_gpu = images.is_mlu and not target.is_mlu
    movers = list(map(lambda t: t.mlu(), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == "mlu"

    def ready(self, x):
        return self.is_cuda and x.is_mlu
