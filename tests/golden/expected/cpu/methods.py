import torch


def move(model, batch, args):
    model.to("cpu")
    model = model.to("cpu")
    images = batch["images"].to("cpu", non_blocking=True)
    target = batch["target"].to("cpu", non_blocking=True)
    extra = batch["extra"].to(device="cpu")
    pair = batch["pair"].to("cpu", non_blocking=True)
    on_gpu = images.is_cpu and not target.is_cpu
    movers = list(map(lambda t: t.to("cpu"), [images, target]))
    to_gpu = torch.Tensor.cuda
    return model, images, target, extra, pair, on_gpu, movers, to_gpu
