"""`torchport compare`'s verdicts on planted faults and legal pairs, in one run (issues 15 and 32).

Each row dumps two short training runs on the CPU with `torchport.debug.dump` and compares them with
`compare_runs` at the default tolerance, in statistics mode and in tensor mode.  A fault must give a divergence
(at the step and module it was planted in, where that is known); a legal pair must give none.  Printed: the verdict,
the worst relative error, the first divergence's step and module, and the ops left unaligned on each side.
Exit 1 when any row's verdict is wrong.  tests/test_debug_verdict.py runs the same models and pairs.

    python bench/compare_matrix.py
"""
from __future__ import annotations

import sys
import tempfile
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

import torch
from torch import nn

from torchport.debug import compare_runs, dump


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1, self.fc2, self.head = nn.Linear(4, 16), nn.Linear(16, 16), nn.Linear(16, 3)

    def forward(self, x):
        return self.head(torch.relu(self.fc2(torch.tanh(self.fc1(x)))))


class ConvNet(nn.Module):
    """The calibration net of SAME_DTYPE_TOLERANCES (debug/verdict.py): conv + batch norm + an MLP."""

    def __init__(self):
        super().__init__()
        self.conv, self.bn = nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8)
        self.fc1, self.fc2, self.head = nn.Linear(512, 64), nn.Linear(64, 64), nn.Linear(64, 5)

    def forward(self, x):
        h = torch.relu(self.bn(self.conv(x))).flatten(1)
        return self.head(torch.relu(self.fc2(torch.tanh(self.fc1(h)))))


class TwoBranches(nn.Module):
    """Two parallel branches summed; `swap` runs them in the other order (the same result, another op order)."""

    def __init__(self, swap=False):
        super().__init__()
        self.swap = swap
        self.pa = nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 4))
        self.pb = nn.Sequential(nn.Linear(6, 8), nn.ReLU(), nn.Linear(8, 4))

    def forward(self, x):
        first, second = (self.pb, self.pa) if self.swap else (self.pa, self.pb)
        one = first(x)
        two = second(x)
        return one + two


def run_mlp(folder, tensors, scale_last=1.0, double_at=None, amp=None):
    """3 SGD steps of MLP; a last layer scaled, an input doubled at a step, or autocast to `amp` are the pairs."""
    torch.manual_seed(0)
    model = MLP()
    with torch.no_grad():
        model.head.weight.mul_(scale_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.manual_seed(1)
    with dump(folder, model, tensors=tensors) as d:
        for step, x in enumerate([torch.randn(8, 4) for _ in range(3)]):
            x = x * 2 if step == double_at else x
            opt.zero_grad()
            with torch.autocast("cpu", dtype=amp or torch.bfloat16, enabled=amp is not None):
                out = model(x)
            out.float().pow(2).mean().backward()
            opt.step()
            d.step()
    return folder


def run_conv(folder, tensors, threads=None, round_trip_at=None, steps=4):
    """`steps` SGD steps of ConvNet on `threads` threads (another reduction order); `round_trip_at`: one fp32 weight
    goes through bfloat16 and back before that step (the fault to find)."""
    torch.manual_seed(0)
    model = ConvNet()
    opt = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
    torch.manual_seed(1)
    data = [(torch.randn(16, 3, 8, 8), torch.randint(0, 5, (16,))) for _ in range(steps)]
    before = torch.get_num_threads()
    torch.set_num_threads(threads or before)
    try:
        with dump(folder, model, tensors=tensors) as d:
            for step, (x, y) in enumerate(data):
                if step == round_trip_at:
                    with torch.no_grad():
                        model.fc2.weight.copy_(model.fc2.weight.bfloat16().float())
                opt.zero_grad()
                nn.functional.cross_entropy(model(x), y).backward()
                opt.step()
                d.step()
    finally:
        torch.set_num_threads(before)
    return folder


def run_branches(folder, tensors, swap=False, fault=False, steps=2):
    """`steps` SGD steps of TwoBranches, its branches in either order; `fault` scales one weight of branch pb."""
    torch.manual_seed(0)
    model = TwoBranches(swap)
    if fault:
        with torch.no_grad():
            model.pb[2].weight.mul_(1.2)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    torch.manual_seed(1)
    with dump(folder, model, tensors=tensors) as d:
        for x in [torch.randn(5, 6) for _ in range(steps)]:
            opt.zero_grad()
            model(x).pow(2).mean().backward()
            opt.step()
            d.step()
    return folder


# (name, run A, run B, a fault?, (step, module prefix) where it is planted or None)
ROWS = [
    ("x1.5 last layer", lambda f, t: run_mlp(f, t), lambda f, t: run_mlp(f, t, scale_last=1.5), True, (0, "head")),
    ("x2 input at step 1", lambda f, t: run_mlp(f, t), lambda f, t: run_mlp(f, t, double_at=1), True, (1, None)),
    ("unperturbed", lambda f, t: run_mlp(f, t), lambda f, t: run_mlp(f, t), False, None),
    ("bf16 autocast vs fp32", lambda f, t: run_mlp(f, t), lambda f, t: run_mlp(f, t, amp=torch.bfloat16), False, None),
    ("fp16 autocast vs fp32", lambda f, t: run_mlp(f, t), lambda f, t: run_mlp(f, t, amp=torch.float16), False, None),
    ("bf16 round trip of one fp32 weight at step 2", lambda f, t: run_conv(f, t, threads=2),
     lambda f, t: run_conv(f, t, threads=2, round_trip_at=2), True, (2, "fc2")),
    ("fp32, 2 threads vs 1 (reduction order)", lambda f, t: run_conv(f, t, threads=2),
     lambda f, t: run_conv(f, t, threads=1), False, None),
    ("branches reordered", lambda f, t: run_branches(f, t), lambda f, t: run_branches(f, t, swap=True), False, None),
    ("branches reordered, fault in pb", lambda f, t: run_branches(f, t),
     lambda f, t: run_branches(f, t, swap=True, fault=True), True, (0, "pb")),
]


def main() -> int:
    warnings.simplefilter("ignore")
    wrong = 0
    print(f"{'pair':46} {'mode':10} {'verdict':12} {'worst err':>9}  {'first divergence':24} unaligned  right?")
    with tempfile.TemporaryDirectory() as tmp:
        for i, (name, run_a, run_b, fault, where) in enumerate(ROWS):
            for mode, tensors in (("statistics", False), ("tensors", True)):
                a, b = Path(tmp, f"{i}{mode}a"), Path(tmp, f"{i}{mode}b")
                result = compare_runs(run_a(a, tensors), run_b(b, tensors))
                first, worst = result.first_divergence, result.worst
                diverged = bool(result.failed)
                at = f"step {first.step} {first.a.get('module') or first.a['name']}" if first is not None else "-"
                right = diverged == fault
                if right and fault and where is not None and first is not None:
                    step, module = where
                    right = first.step == step and (module is None or str(first.a.get("module", "")).startswith(module))
                wrong += not right
                print(f"{name:46} {mode:10} {'divergence' if diverged else 'none':12} "
                      f"{worst.error if worst else float('nan'):9.3g}  {at[:24]:24} {result.only_a}/{result.only_b:<7}"
                      f" {'yes' if right else 'NO'}")
    print(f"{len(ROWS) * 2 - wrong} of {len(ROWS) * 2} verdicts right")
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
