"""What torchport.debug costs on a small model, in one run.

A training step (forward, backward, SGD) of a small convolution + transformer model on the CPU,
timed plain and under each debug mode: operator recording, NaN/Inf tracking, per-op statistics
dump, and compare with the CPU reference.  Modes alternate within one process over several
rounds (this machine's speed drifts between processes); printed are the median step times and
the ratios to plain.
"""
from __future__ import annotations

import argparse
import contextlib
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    args = ap.parse_args()
    warnings.simplefilter("ignore")
    import torch
    import torch.nn as nn

    from torchport.debug import NanInfTracker, Reporting, compare_with_reference, dump, record_ops

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.BatchNorm2d(16), nn.ReLU(), nn.Flatten(2))
    attn = nn.TransformerEncoderLayer(16, 4, 64, dropout=0.0, batch_first=True)
    head = nn.Linear(16, 10)
    params = list(model.parameters()) + list(attn.parameters()) + list(head.parameters())
    opt = torch.optim.SGD(params, lr=0.01)
    x = torch.randn(4, 3, 16, 16)
    work = Path(tempfile.mkdtemp(prefix="tp-debug-bench-"))

    def train(steps, mode):
        for _ in range(steps):
            out = head(attn(model(x).transpose(1, 2)).mean(1))
            loss = out.pow(2).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
            if mode is not None:
                mode.step()

    modes = {
        "plain": lambda: contextlib.nullcontext(),
        "record_ops": lambda: record_ops(),
        "NanInfTracker": lambda: NanInfTracker(),
        "dump (statistics)": lambda: dump(work / "dump"),
        "compare_with_reference": lambda: compare_with_reference(reporting=Reporting(quiet=True)),
    }
    times = {name: [] for name in modes}
    ops = {}
    train(2, None)  # warm up
    for _ in range(args.rounds):
        for name, make in modes.items():
            ctx = make()
            start = time.perf_counter()
            with ctx as mode:
                train(args.steps, mode if name != "plain" else None)
            times[name].append((time.perf_counter() - start) / args.steps)
            if name == "record_ops":
                ops["calls"] = mode.to_dict()["total_calls"] // args.steps
    base = statistics.median(times["plain"])
    print(f"small model training step (conv + batchnorm + transformer layer + linear, batch 4, "
          f"{ops.get('calls', '?')} aten ops per step, 1 thread):")
    for name, t in times.items():
        m = statistics.median(t)
        print(f"  {name:24s} {m * 1e3:8.2f} ms/step   x{m / base:6.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
