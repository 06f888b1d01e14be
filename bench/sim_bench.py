"""Simulated device vs CPU: step time of a small conv net training step, as a ratio (target <= 1.5).

One process, same model and data on both: the simulated `npu` (host kernels for the target's op list,
conv through convolution_overrideable) and the CPU.  Steps alternate between the two so that machine
noise hits both; the median of each is compared.  Also prints the extension's first build time (from
the cache's build.json, or measured now with --rebuild into a temporary cache).

    python bench/sim_bench.py [--steps 30] [--target npu] [--rebuild]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def model(torch):
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                         nn.Conv2d(16, 32, 3, padding=1, stride=2), nn.BatchNorm2d(32), nn.ReLU(),
                         nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, 10))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=30)
    ap.add_argument("--target", default="npu")
    ap.add_argument("--rebuild", action="store_true", help="time a fresh build in a temporary cache first")
    args = ap.parse_args()

    if args.rebuild:
        with tempfile.TemporaryDirectory() as cache:
            start = time.perf_counter()
            subprocess.run([sys.executable, "-m", "torchport", "sim", "--build"], check=True,
                           env={**os.environ, "TORCHPORT_CACHE": cache})
            print(f"first build (fresh cache): {time.perf_counter() - start:.1f} s")

    import torch

    import torchport.sim as sim
    from torchport.sim import build

    torch.set_num_threads(1)
    start = time.perf_counter()
    sim.install(args.target)
    print(f"simulator start (cached extension, op kernels registered): {time.perf_counter() - start:.2f} s")
    info = build.build_info()
    print(f"first build of this extension: {info.get('seconds')} s (torch {info.get('torch')}, {info.get('built')})")

    torch.manual_seed(0)
    cpu_model = model(torch)
    dev_model = model(torch).to(args.target)
    dev_model.load_state_dict({k: v.to(args.target) for k, v in cpu_model.state_dict().items()})
    runs = {}
    images, labels = torch.randn(16, 3, 32, 32), torch.randint(0, 10, (16,))
    for name, m, device in (("cpu", cpu_model, "cpu"), ("sim", dev_model, args.target)):
        x, y = images.to(device), labels.to(device)
        opt = torch.optim.SGD(m.parameters(), lr=0.01, momentum=0.9)
        runs[name] = (m, x, y, opt)

    def step(name):
        m, x, y, opt = runs[name]
        t = time.perf_counter()
        loss = torch.nn.functional.cross_entropy(m(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
        return time.perf_counter() - t, loss.item()

    for name in runs:   # warm-up
        step(name)
    times = {"cpu": [], "sim": []}
    last = {}
    for _ in range(args.steps):
        for name in ("cpu", "sim"):
            dt, loss = step(name)
            times[name].append(dt)
            last[name] = loss
    cpu_ms = statistics.median(times["cpu"]) * 1e3
    sim_ms = statistics.median(times["sim"]) * 1e3
    print(f"step time, median of {args.steps}: cpu {cpu_ms:.2f} ms, simulated {args.target} {sim_ms:.2f} ms")
    print(f"ratio simulated/cpu: {sim_ms / cpu_ms:.2f} (target <= 1.5)")
    print(f"last losses equal: {last['cpu'] == last['sim']} ({last['cpu']:.6f} vs {last['sim']:.6f})")
    return 0 if sim_ms / cpu_ms <= 1.5 and last["cpu"] == last["sim"] else 1


if __name__ == "__main__":
    sys.exit(main())
