"""timm on a (simulated) device: models built by timm, trained with its optimizer factory, loss and EMA,
the EMA model evaluated (running statistics), devices from timm's own init_distributed_device (2
processes under torchrun when WORLD_SIZE is set).  Prints `RESULT {json}` on rank 0.
Environment: TREE (the converted timm), DEV (cpu, npu, mlu, musa); corpus_sim/site on PYTHONPATH with
CORPUS_SIM_HARNESS=torchvision (see site/sitecustomize.py)."""
import json
import os
import sys
import types

sys.path.insert(0, os.environ["TREE"])
import timm
import torch
from timm.loss import LabelSmoothingCrossEntropy
from timm.optim import create_optimizer_v2
from timm.utils import ModelEmaV3
from timm.utils.distributed import init_distributed_device, reduce_tensor

MODELS = [("resnet18", {}), ("vit_tiny_patch16_224", {"img_size": 64}), ("convnext_atto", {}),
          ("mobilenetv3_small_100", {})]

args = types.SimpleNamespace(device=os.environ["DEV"], dist_backend=None, dist_url=None)
device = init_distributed_device(args)
out = {"device": str(device), "world": args.world_size, "models": {}}
for name, extra in MODELS:
    torch.manual_seed(0)
    model = timm.create_model(name, pretrained=False, num_classes=10, **extra).to(device)
    if args.distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=None if device.type == "cpu"
                                                          else [device.index])
    opt = create_optimizer_v2(model, opt="adamw", lr=1e-3, weight_decay=0.05)
    ema = ModelEmaV3(model, decay=0.9)
    loss_fn = LabelSmoothingCrossEntropy(0.1)
    losses = []
    for step in range(2):
        g = torch.Generator().manual_seed(step + 10 * args.rank)
        x = torch.randn(2, 3, 64, 64, generator=g).to(device)
        y = torch.randint(0, 10, (2,), generator=g).to(device)
        loss = loss_fn(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        ema.update(model, step=step)
        if args.distributed:
            loss = reduce_tensor(loss.detach(), args.world_size)
        losses.append(loss.item())
    ema.module.eval()
    with torch.no_grad():
        evaluated = ema.module(x).float().sum().item()
    out["models"][name] = {"losses": losses, "ema_eval": evaluated, "on": str(next(model.parameters()).device)}
if args.rank == 0:
    print("RESULT " + json.dumps(out), flush=True)
