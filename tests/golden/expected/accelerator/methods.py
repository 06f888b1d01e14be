import torch


def move(model, batch, args):
    model.to(torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type, args.gpu))
    model = model.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    images = batch["images"].to((torch.accelerator.current_accelerator() or torch.device("cpu")).type, non_blocking=True)
    target = batch["target"].to(torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type, args.gpu), non_blocking=True)
    extra = batch["extra"].to(device=torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type, args.gpu))
    pair = batch["pair"].to(torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type, 0), non_blocking=True)
    on_gpu = (images.device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type) and not (target.device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    movers = list(map(lambda t: t.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu


class Prefetcher:
    """timm's PrefetchLoader: is_cuda is the class's own attribute, assigned from a device check."""

    def __init__(self, device):
        self.is_cuda = device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type

    def ready(self, x):
        return self.is_cuda and (x.device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type)
