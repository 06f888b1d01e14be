"""ultralytics on a (simulated) device: the device chosen by the project's own select_device, YOLO detection
models built from their yaml, three training steps with the project's loss, evaluation, its autocast helper.
Under torchrun (WORLD_SIZE=2) the device and process group come from the project's BaseTrainer._setup_ddp
and the model trains wrapped in DistributedDataParallel.  With PROCESSES=2 the project launches itself:
YOLO(...).train(device="0,1") on a synthetic dataset writes its DDP script and starts it with torchrun
(ultralytics.utils.dist), one epoch; the results are its results.csv.  Prints `RESULT {json}` (rank 0).
Environment: TREE (the converted ultralytics), DEV (cpu, npu, mlu, musa), PROCESSES (optional); TREE and
corpus_sim/site on PYTHONPATH with CORPUS_SIM_HARNESS=torchvision (see site/sitecustomize.py)."""
import csv
import json
import os
import sys
import tempfile
import types

sys.path.insert(0, os.environ["TREE"])
os.environ.setdefault("YOLO_OFFLINE", "1")
import torch

DEV = os.environ["DEV"]
if DEV != "cpu":   # a converted entry script imports the vendor package; a driver does it itself
    __import__({"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa"}[DEV])
from ultralytics.cfg import get_cfg  # noqa: E402
from ultralytics.nn.tasks import DetectionModel  # noqa: E402
from ultralytics.utils import DEFAULT_CFG  # noqa: E402
from ultralytics.utils.torch_utils import autocast, select_device, torch_distributed_zero_first  # noqa: E402


def chosen(request):
    """What select_device answers for a request (the error's first words when it refuses)."""
    try:
        return str(select_device(request, verbose=False))
    except (ValueError, RuntimeError) as e:
        return f"refused: {str(e).splitlines()[0][:60]}"


def own_launch() -> dict:
    """One epoch of YOLO(...).train(device="0,1"): ultralytics starts its own DDP processes."""
    from PIL import Image
    from ultralytics import YOLO
    with tempfile.TemporaryDirectory() as tmp:
        g = torch.Generator().manual_seed(0)
        for split in ("train", "val"):
            for folder in ("images", "labels"):
                os.makedirs(os.path.join(tmp, folder, split))
            for i in range(4):
                pixels = (torch.rand(64, 64, 3, generator=g) * 255).to(torch.uint8).numpy()
                Image.fromarray(pixels).save(os.path.join(tmp, "images", split, f"{i}.jpg"))
                with open(os.path.join(tmp, "labels", split, f"{i}.txt"), "w") as f:
                    f.write("0 0.5 0.5 0.3 0.3\n1 0.3 0.3 0.2 0.2\n")
        data = os.path.join(tmp, "data.yaml")
        with open(data, "w") as f:
            f.write(f"path: {tmp}\ntrain: images/train\nval: images/val\nnames:\n  0: a\n  1: b\n")
        model = YOLO("yolov8n.yaml")
        model.train(data=data, epochs=1, imgsz=64, batch=4, workers=0, device="0,1", plots=False, amp=False,
                    val=False, project=os.path.join(tmp, "runs"), name="t", seed=0, verbose=False)
        with open(os.path.join(model.trainer.save_dir, "results.csv")) as f:
            row = next(csv.DictReader(f))
    return {"world": model.trainer.world_size, "device": str(model.trainer.device),
            "losses": [float(row[f"train/{k}_loss"]) for k in ("box", "cls", "dfl")]}


if int(os.environ.get("PROCESSES", "1")) > 1:
    print("RESULT " + json.dumps(own_launch()), flush=True)
    sys.exit(0)
world = int(os.environ.get("WORLD_SIZE", "1"))
if world > 1:
    from ultralytics.engine.trainer import BaseTrainer
    trainer = types.SimpleNamespace(args=types.SimpleNamespace(device="0,1"), world_size=world)
    BaseTrainer._setup_ddp(trainer)   # picks the device of this rank and starts the process group
    device, selected = trainer.device, {}
else:
    requests = ["", "cpu", "0"] + ([f"{DEV}:0", DEV] if DEV != "cpu" else [])
    selected = {r: chosen(r) for r in requests}
    device = select_device("", verbose=False)   # the default: the accelerator when there is one
rank = int(os.environ.get("RANK", "0"))


def batch(size=64):
    g = torch.Generator().manual_seed(1)
    return {"img": torch.rand(2, 3, size, size, generator=g), "batch_idx": torch.tensor([0., 0., 1.]),
            "cls": torch.tensor([[1.], [2.], [0.]]),
            "bboxes": torch.tensor([[.3, .3, .2, .2], [.6, .6, .3, .4], [.5, .5, .5, .5]])}


out = {"selected": selected, "device": str(device), "world": world, "models": {}}
for cfg in ("yolov8n.yaml", "yolo11n.yaml"):
    torch.manual_seed(0)
    with torch_distributed_zero_first(-1):
        model = DetectionModel(cfg, nc=3, verbose=False)
    model.args = get_cfg(DEFAULT_CFG)
    model = model.to(device).train()
    trained = model
    if world > 1:   # as BaseTrainer._setup_train wraps it (no device_ids for a CPU module)
        trained = torch.nn.parallel.DistributedDataParallel(
            model, device_ids=None if device.type == "cpu" else [device.index], find_unused_parameters=True)
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    data = {k: v.to(device) for k, v in batch().items()}
    losses = []
    for _step in range(3):
        if world > 1:   # each rank its own half of the batch, through the wrapper's forward
            mine = {k: v[rank::world] if k == "img" else v for k, v in data.items()}
            keep = mine["batch_idx"] == rank
            mine = {"img": mine["img"], "batch_idx": mine["batch_idx"][keep] * 0, "cls": mine["cls"][keep],
                    "bboxes": mine["bboxes"][keep]}
            loss, _ = trained(mine)
        else:
            loss, _ = model.loss(data)
        loss = loss.sum()
        opt.zero_grad()
        loss.backward()
        opt.step()
        if world > 1:
            loss = loss.detach().clone()
            torch.distributed.all_reduce(loss)
        losses.append(loss.item())
    model.eval()
    with torch.no_grad():
        pred = model(data["img"])
        pred = pred[0] if isinstance(pred, (list, tuple)) else pred
        with autocast(True, device=device.type):   # the project's AMP helper, on the chosen device
            amp_pred = model(data["img"])
            amp_pred = amp_pred[0] if isinstance(amp_pred, (list, tuple)) else amp_pred
    out["models"][cfg] = {"losses": losses, "ema_eval": pred.float().sum().item(),
                          "on": str(next(model.parameters()).device), "autocast_dtype": str(amp_pred.dtype)}
if rank == 0:
    print("RESULT " + json.dumps(out), flush=True)
