"""yolox on a (simulated) device: yolox_nano built by the project's own Exp, three training steps with
its loss and EMA, evaluation with decoding and NMS, its device helpers.  Prints `RESULT {json}`.
With PROCESSES=N the same steps run in N processes started by the project's own launcher
(yolox.core.launch: mp.spawn, init_process_group with its default backend, set_device), each with
yolox's Trainer device and DDP as its Trainer wraps it; every rank trains on the same batch, so the
losses are the single-process ones.  Environment: TREE (the converted yolox), DEV (cpu, npu, mlu,
musa), SHIMS (harness torchvision), PROCESSES (optional)."""
import argparse
import copy
import json
import os
import sys
import tempfile

sys.path[:0] = [os.environ["TREE"], os.environ["SHIMS"]]
import torch  # noqa: E402

DEV = os.environ["DEV"]
if DEV != "cpu":   # a converted entry script imports the vendor package; a driver does it itself
    __import__({"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa"}[DEV])
import yolox.utils as yu  # noqa: E402
from yolox.exp import get_exp  # noqa: E402

EXP_FILE = os.path.join(os.environ["TREE"], "exps", "default", "yolox_nano.py")


def build_exp(exp_file=EXP_FILE):
    exp = get_exp(exp_file, None)
    exp.num_classes, exp.input_size, exp.test_size = 3, (128, 128), (128, 128)
    exp.warmup_epochs, exp.basic_lr_per_img = 0, 0.01 / 2   # no warm-up: lr 0.01 from the first step
    return exp


def run(exp, device, wrap=None) -> dict:
    """Train three steps on `device` (the model wrapped by `wrap`), evaluate the EMA model."""
    torch.manual_seed(0)
    model = exp.get_model()
    model.to(device)
    g = torch.Generator().manual_seed(1)
    images = torch.rand(2, 3, 128, 128, generator=g) * 255
    labels = torch.zeros(2, 10, 5)
    labels[0, :3] = torch.tensor([[0, 40, 40, 30, 30], [1, 80, 70, 40, 20], [2, 60, 100, 20, 30]])
    labels[1, :2] = torch.tensor([[1, 64, 64, 50, 50], [0, 30, 90, 16, 24]])
    optimizer = exp.get_optimizer(2)
    if wrap is not None:
        model = wrap(model)
    ema = yu.ModelEMA(model, 0.9)
    losses = []
    model.train()
    for _step in range(3):
        inputs, targets = exp.preprocess(images.to(device), labels.clone().to(device), (128, 128))
        loss = model(inputs, targets)["total_loss"]
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        ema.update(model)
        losses.append(loss.item())
    evaluated = copy.deepcopy(ema.ema).eval()
    with torch.no_grad():
        raw = evaluated(images.to(device))
        detections = yu.postprocess(raw, exp.num_classes, 0.001, 0.65)
    yu.synchronize()
    return {"losses": losses, "ema_eval": raw.float().sum().item(), "on": str(next(model.parameters()).device),
            "detections": [None if d is None else int(d.shape[0]) for d in detections],
            "memory_mb": yu.gpu_mem_usage() if DEV != "cpu" else None}


def worker(exp_file, args):
    """One process of yolox.core.launch: the Trainer's device and DDP, the single-process steps."""
    from torch.nn.parallel import DistributedDataParallel
    from yolox.core import Trainer
    exp = build_exp(exp_file)
    exp.output_dir = args.output_dir
    trainer = Trainer(exp, args)
    out = run(exp, trainer.device, lambda m: DistributedDataParallel(m, device_ids=[trainer.local_rank],
                                                                     broadcast_buffers=False))
    ranks = yu.all_gather({"rank": trainer.rank, "device": trainer.device, "losses": out["losses"]})
    if trainer.rank == 0:
        out.update(world=yu.get_world_size(), device=trainer.device, ranks=ranks,
                   backend=torch.distributed.get_backend())
        print("RESULT " + json.dumps(out), flush=True)


if __name__ == "__main__":
    processes = int(os.environ.get("PROCESSES", "1"))
    if processes > 1:
        from yolox.core import launch
        with tempfile.TemporaryDirectory() as tmp:
            args = argparse.Namespace(fp16=False, cache=False, experiment_name="driver", output_dir=tmp)
            launch(worker, processes, dist_url="auto", args=(EXP_FILE, args))
    else:
        device = "cpu" if DEV == "cpu" else f"{DEV}:0"
        print("RESULT " + json.dumps(run(build_exp(), device)), flush=True)
