"""torchport profile: a CUDA-style training script profiled on the CPU, and profile diff."""
import csv
import json
import os
import subprocess
import sys
from collections import defaultdict

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
SCRIPT = """
import sys, torch
from torch.utils.data import DataLoader, TensorDataset
layers = [torch.nn.Linear(16, 32), torch.nn.ReLU()]
if "--norm" in sys.argv:
    layers.append(torch.nn.LayerNorm(32))     # the op the second model adds
layers.append(torch.nn.Linear(32, 1))
model = torch.nn.Sequential(*layers).cuda()
opt = torch.optim.SGD(model.parameters(), 0.01)
loader = DataLoader(TensorDataset(torch.randn(256, 16), torch.randn(256, 1)), batch_size=16)
for x, y in loader:
    x, y = x.cuda(), y.cuda()
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
print("finished all batches")
"""


def profile(tmp_path, name, *args):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    out = tmp_path / name
    p = subprocess.run([sys.executable, "-m", "torchport", "profile", "--to", "cpu", "--steps", "3", "-o", str(out),
                        "--", "python", str(script), *args], capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr
    return out, p


def test_profile_writes_consistent_files(tmp_path):
    out, p = profile(tmp_path, "prof")
    assert "finished all batches" not in p.stdout, "the script ends after wait + warmup + 3 steps"
    for name in ("trace.json", "ops.csv", "summary.md", "profile.json"):
        assert (out / name).is_file(), name
    data = json.loads((out / "profile.json").read_text())
    assert data["steps"]["profiled"] == 3 and len(data["steps"]["wall_step_us"]) == 3
    assert data["activities"] == ["CPU"] and data["bound"].startswith("host only")
    trace = json.loads((out / "trace.json").read_text())["traceEvents"]
    # torch's op table drops an event whose parent has its name and no other child (div_ calling div_):
    # rebuild the nesting from the trace and apply the same rule
    ops = sorted((e for e in trace if e.get("cat") == "cpu_op"), key=lambda e: (e.get("tid"), e["ts"], -e["dur"]))
    parent, children, stack = {}, defaultdict(list), []
    for i, e in enumerate(ops):
        while stack and (ops[stack[-1]].get("tid") != e.get("tid")
                         or ops[stack[-1]]["ts"] + ops[stack[-1]]["dur"] <= e["ts"]):
            stack.pop()
        if stack:
            parent[i] = stack[-1]
            children[stack[-1]].append(i)
        stack.append(i)
    in_trace, calls = defaultdict(float), defaultdict(int)
    for i, e in enumerate(ops):
        p = parent.get(i)
        if p is not None and ops[p]["name"] == e["name"] and len(children[p]) == 1:
            continue
        in_trace[e["name"]] += e["dur"]
        calls[e["name"]] += 1
    with open(out / "ops.csv", newline="") as f:
        rows = {r["op"]: r for r in csv.DictReader(f)}
    aten = [op for op in rows if op.startswith("aten::")]
    assert {"aten::addmm", "aten::mse_loss", "aten::mm"} <= set(aten)
    for op in aten:
        assert float(rows[op]["host_total_us"]) == pytest.approx(in_trace[op], rel=1e-3, abs=0.01), op
        assert int(rows[op]["calls"]) == calls[op], op
    assert "; " in rows["aten::addmm"]["input_shapes"] or rows["aten::addmm"]["input_shapes"].startswith("[[")
    summary = (out / "summary.md").read_text()
    assert "- profiled steps: 3" in summary and "| aten::addmm |" in summary and "data loading:" in summary
    assert data["totals"]["dataloader_us"] > 0, "DataLoader iteration is measured"


def test_profile_diff_names_the_added_op(tmp_path):
    a, _ = profile(tmp_path, "a")
    b, _ = profile(tmp_path, "b", "--norm")
    p = subprocess.run([sys.executable, "-m", "torchport", "profile", "diff", str(a), str(b), "-o",
                        str(tmp_path / "d")], capture_output=True, text=True, env=ENV)
    assert p.returncode == 0, p.stderr
    assert "aten::native_layer_norm" in p.stdout.split("added in B:")[1].split(";")[0]
    md = (tmp_path / "d" / "diff.md").read_text()
    assert "ops only in B (added):" in md and "aten::native_layer_norm" in md and "removed): none" in md
    png = tmp_path / "d" / "diff.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    p = subprocess.run([sys.executable, "-m", "torchport", "profile", "diff", str(a), str(tmp_path / "none")],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 2 and "no profile in" in p.stderr


def test_profiler_context_manager(tmp_path):
    from torchport.profile import Profiler

    model = torch.nn.Linear(8, 8)
    with Profiler(tmp_path / "p", wait=0, warmup=1, active=2) as prof:
        for _ in range(5):
            model(torch.randn(4, 8)).sum().backward()
            prof.step()
    assert prof.result["steps"]["profiled"] == 2
    assert any(o["op"] == "aten::addmm" and o["calls"] == 2 for o in prof.result["ops"])
    assert not any(o["op"].startswith("ProfilerStep") for o in prof.result["ops"])
