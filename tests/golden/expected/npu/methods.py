import torch
import torch_npu  # noqa: F401


def move(model, batch, args):
    model.npu(args.gpu)
    model = model.npu()
    images = batch["images"].npu(non_blocking=True)
    target = batch["target"].npu(args.gpu, non_blocking=True)
    extra = batch["extra"].npu(device=args.gpu)
    pair = batch["pair"].npu(0, True)
    on_gpu = images.is_npu and not target.is_npu
    movers = list(map(lambda t: t.npu(), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == "npu"

    def ready(self, x):
        return self.is_cuda and x.is_npu
