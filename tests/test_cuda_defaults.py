"""torch APIs whose device parameter defaults to "cuda" (kb/cuda_names.toml [cuda_default]): a call that leaves it
out gets the target's device (pytorch-ignite 0.5.5's `GradScaler(enabled=with_amp)`: on npu the scaler disabled
itself, "CUDA is not available", and the training ran without loss scaling, unreported)."""
import ast
import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.backends import available_targets, load_target
from torchport.converter.run import Converter
from torchport.kb import bundled_data, cuda_defaults

REPRO = '''\
import torch
from torch.amp import GradScaler
scaler = GradScaler(enabled=True)
scaler2 = torch.amp.GradScaler()
'''
SRC = str(Path(__file__).resolve().parents[1] / "src")


def convert(text: str, target: str):
    new, findings, _ = Converter(target).convert_text("a.py", text.encode(), "python")
    return (new.decode() if new is not None else text), findings


@pytest.mark.parametrize("target", available_targets())
def test_a_grad_scaler_without_a_device_gets_the_targets(target):
    t = load_target(target)
    device = f'"{t.device}"' if t.device else t.device_expr.format(torch="torch")
    text, findings = convert(REPRO, target)
    assert f"scaler = GradScaler({device}, enabled=True)" in text
    assert f"scaler2 = torch.amp.GradScaler({device})" in text
    added = [f for f in findings if f.rule == "TP201"]
    assert len(added) == 2 and all('device defaults to "cuda"' in f.message for f in added)
    again, findings = convert(text, target)                      # check on the output: nothing more to change
    assert again == text and not [f for f in findings if f.is_change]


def test_other_spellings_keywords_and_what_is_left():
    text, findings = convert("import torch\nfrom torch.amp import GradScaler as GS\nkw = {}\n"
                             "a = GS()\nb = torch.GradScaler(init_scale=8.0)\nc = GS(device='cuda')\nd = GS(**kw)\n"
                             "from torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
                             "e = ShardedGradScaler('cuda')\nf = torch.autograd.graph.save_on_cpu(pin_memory=True)\n",
                             "xpu")
    assert 'a = GS("xpu")' in text and 'b = torch.GradScaler("xpu", init_scale=8.0)' in text
    assert "c = GS(device='xpu')" in text and "d = GS(**kw)" in text
    assert "e = ShardedGradScaler('xpu')" in text      # a "cuda" there is a device argument now
    assert 'save_on_cpu(pin_memory=True, device_type="xpu")' in text
    [left] = [f for f in findings if f.action == "advice"]
    assert left.line == 7 and left.message.startswith("not converted: unpacked arguments")


def test_a_name_imported_from_two_modules_is_left_and_said():
    """`try: from torch.amp import GradScaler / except ImportError: from torch.cuda.amp import GradScaler`: the
    fallback takes no device (its first parameter is init_scale), so the call is the user's to change."""
    text, findings = convert("try:\n    from torch.amp import GradScaler\nexcept ImportError:\n"
                             "    from torch.cuda.amp import GradScaler\nscaler = GradScaler(enabled=True)\n", "npu")
    assert "scaler = GradScaler(enabled=True)" in text
    assert [(f.line, f.action) for f in findings if f.rule == "TP201"] == [(5, "advice")]


def test_targets_whose_device_would_break_the_call_keep_cudas_default():
    source = ("import torch\nfrom torch.distributed.fsdp.sharded_grad_scaler import ShardedGradScaler\n"
              "s = ShardedGradScaler()\nwith torch.autograd.graph.save_on_cpu(pin_memory=True):\n    pass\n")
    assert "ShardedGradScaler()" in convert(source, "mps")[0]
    for target in ("cpu", "accelerator"):   # pinning fails where there is no accelerator
        assert "save_on_cpu(pin_memory=True)" in convert(source, target)[0]


def _torch_root() -> Path:
    spec = importlib.util.find_spec("torch")   # found, not imported
    assert spec is not None and spec.origin is not None
    return Path(spec.origin).parent


def _cuda_defaults_in(root: Path) -> dict:
    """{dotted name: [(parameter, position)]} of the functions and classes (their __init__) in torch's public
    modules with a parameter whose default is "cuda"."""
    found: dict = {}
    for path in root.rglob("*.py"):
        rel = path.relative_to(root).with_suffix("")
        if any(p.startswith("_") and p != "__init__" for p in rel.parts) or rel.parts[0] in ("testing", "cuda"):
            continue
        module = ".".join(("torch", *(p for p in rel.parts if p != "__init__")))
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            fns = [(node.name, node)] if isinstance(node, ast.FunctionDef) else \
                [(node.name, f) for f in node.body if isinstance(f, ast.FunctionDef) and f.name == "__init__"] \
                if isinstance(node, ast.ClassDef) else []
            for name, fn in fns:
                if name.startswith("_"):
                    continue
                positional = fn.args.posonlyargs + fn.args.args
                pairs = list(zip(positional[len(positional) - len(fn.args.defaults):], fn.args.defaults))
                pairs += [(a, d) for a, d in zip(fn.args.kwonlyargs, fn.args.kw_defaults) if d is not None]
                for arg, default in pairs:
                    if isinstance(default, ast.Constant) and default.value == "cuda":
                        skip = 1 if positional and positional[0].arg in ("self", "cls") else 0
                        index = next((i - skip for i, a in enumerate(positional) if a is arg), -1)
                        found.setdefault(f"{module}.{name}", []).append((arg.arg, index))
    return found


# torch 2.13.0's public APIs with a "cuda" default that the table leaves out, and why
LEFT = {"torch.fx.experimental.const_fold.FoldedGraphModule": "an fx pass's graph module, not training code"}


@pytest.mark.torch
def test_the_table_is_torchs_public_apis_with_a_cuda_default():
    """Each entry is a torch API whose parameter at that position and keyword defaults to "cuda"; and every such
    public API (outside torch.cuda, whose names the API rules convert) is in the table or in LEFT."""
    found = _cuda_defaults_in(_torch_root())
    table = bundled_data("cuda_names.toml")["cuda_default"]   # each named where torch defines it
    for name, entry in table.items():
        assert (entry["keyword"], entry["position"]) in found.get(name, ()), f"{name}: no such \"cuda\" default"
        assert all(cuda_defaults()[n] == cuda_defaults()[name] for n in entry.get("also", ()))
    assert set(found) - set(table) - set(LEFT) == set(), "a new API with a \"cuda\" default: add it or leave it"


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_the_converted_scalers_scale(tmp_path, target):
    """cpu with plain python, npu on the simulated device: the scalers are enabled and scale (before the fix both
    said False and 1.0, with the warning that CUDA is not available)."""
    out = tmp_path / "train.py"
    out.write_text(convert(REPRO + "model = torch.nn.Linear(2, 1).cuda()\n"
                                   "opt = torch.optim.SGD(model.parameters(), lr=0.1)\n"
                                   "scaler.scale(model(torch.ones(3, 2).cuda()).sum()).backward()\n"
                                   "scaler.step(opt)\nscaler.update()\n"
                                   "print(scaler.is_enabled(), scaler2.is_enabled(), scaler.get_scale())\n", target)[0])
    command = [sys.executable, str(out)]
    if target != "cpu":
        command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--", *command]
    p = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["True", "True", "65536.0"]
    assert "CUDA is not available" not in p.stderr


@pytest.mark.subprocess
@pytest.mark.torch
def test_torchport_run_maps_a_scaler_left_to_its_default(tmp_path):
    """The run-time mapping (unmodified CUDA code) too: `GradScaler()` and `torch.GradScaler(...)` are CUDA's."""
    path = tmp_path / "scale.py"
    path.write_text("import torch\na = torch.amp.GradScaler()\nb = torch.GradScaler(enabled=True)\n"
                    "c = torch.amp.GradScaler('cpu')\nprint(a._device, a.is_enabled(), b._device, c._device)\n")
    report = tmp_path / "r.json"
    p = subprocess.run([sys.executable, "-m", "torchport", "run", "--to", "cpu", "--report", str(report), str(path)],
                       capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": SRC})
    assert p.returncode == 0, p.stderr[-2000:]
    assert p.stdout.split() == ["cpu", "True", "cpu", "cpu"]
    assert json.loads(report.read_text())["redirected"]["torch.amp.GradScaler(device)"] == 2
