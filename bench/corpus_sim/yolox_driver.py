"""yolox on a (simulated) device: yolox_nano built by the project's own Exp, three training steps with
its loss and EMA, evaluation with decoding and NMS, its device helpers.  Prints `RESULT {json}`.
Environment: TREE (the converted yolox), DEV (cpu, npu, mlu, musa), SHIMS (harness torchvision)."""
import copy
import json
import os
import sys

sys.path[:0] = [os.environ["TREE"], os.environ["SHIMS"]]
import torch  # noqa: E402

DEV = os.environ["DEV"]
if DEV != "cpu":   # a converted entry script imports the vendor package; a driver does it itself
    __import__({"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa"}[DEV])
import yolox.utils as yu  # noqa: E402
from yolox.exp import get_exp  # noqa: E402

torch.manual_seed(0)
exp = get_exp(os.path.join(os.environ["TREE"], "exps", "default", "yolox_nano.py"), None)
exp.num_classes, exp.input_size, exp.test_size = 3, (128, 128), (128, 128)
model = exp.get_model()
device = "cpu" if DEV == "cpu" else f"{DEV}:0"
model.to(device)
g = torch.Generator().manual_seed(1)
images = torch.rand(2, 3, 128, 128, generator=g) * 255
labels = torch.zeros(2, 10, 5)
labels[0, :3] = torch.tensor([[0, 40, 40, 30, 30], [1, 80, 70, 40, 20], [2, 60, 100, 20, 30]])
labels[1, :2] = torch.tensor([[1, 64, 64, 50, 50], [0, 30, 90, 16, 24]])

optimizer = exp.get_optimizer(2)
ema = yu.ModelEMA(model, 0.9)
losses = []
model.train()
for step in range(3):
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
out = {"losses": losses, "ema_eval": raw.float().sum().item(), "on": str(next(model.parameters()).device),
       "detections": [None if d is None else int(d.shape[0]) for d in detections],
       "memory_mb": yu.gpu_mem_usage() if DEV != "cpu" else None}
print("RESULT " + json.dumps(out), flush=True)
