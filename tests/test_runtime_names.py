"""Code convert writes uses only names bound where it runs.  A name imported under `if TYPE_CHECKING:` is there
for type checkers: unbound when the module runs (pytorch-ignite 0.5.5, ignite/engine/__init__.py binds
`GradScaler` so, and apex's conversion wrote `GradScaler("cpu", enabled=False)` at module level: NameError on
`import ignite.engine`).  A name imported inside a function is bound in that function only."""
import ast
import os
import sys

import pytest
from conftest import ROOT, run_program

from torchport.converter.run import Converter
from torchport.core.finding import ERROR

# the shape of ignite 0.5.5's engine module: a typing-only torch import first, apex imported in a library function
IGNITE = '''from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from torch.amp import GradScaler

import torch


def train_step_apex(model, optimizer, x):
    from apex import amp as apex_amp

    loss = model(x).sum()
    with apex_amp.scale_loss(loss, optimizer) as scaled_loss:
        scaled_loss.backward()
    optimizer.step()
'''


def convert(text: str, target: str) -> tuple:
    new, findings, _ = Converter(target).convert_text("m.py", text.encode(), "python")
    return (new.decode() if new is not None else text), findings


def module_names(source: str) -> set:
    """The names the module binds at run time at its top level (imports and assignments outside TYPE_CHECKING)."""
    names = set()
    for stmt in ast.parse(source).body:
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.dump(stmt.test):
            continue
        for node in ast.walk(stmt) if not isinstance(stmt, (ast.FunctionDef, ast.ClassDef)) else ():
            if isinstance(node, ast.alias):
                names.add((node.asname or node.name).split(".")[0])
            elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
                names.add(node.id)
    return names


@pytest.mark.parametrize("target", ["cpu", "xpu", "mps", "accelerator", "npu"])
def test_the_module_level_scaler_never_uses_a_typing_only_name(target):
    out, findings = convert(IGNITE, target)
    scaler = next(line for line in out.splitlines() if line.startswith("amp_scaler = "))
    assert "GradScaler(" in scaler and scaler.split("=", 1)[1].strip().startswith("torch.")
    assert "torch" in module_names(out) and not [f for f in findings if f.action == ERROR]


def test_a_typing_only_alias_is_not_the_name_of_torch():
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch as th\nimport torch\n\n\n"
            "def f(x):\n    return x.to('cuda')\n")
    out, _ = convert(text, "accelerator")
    assert "torch.accelerator.current_accelerator()" in out and "th.accelerator" not in out


def test_torch_imported_only_for_type_checkers_is_imported_for_the_code_convert_writes():
    text = "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    import torch\n\n\ndef f(x):\n    return x.to('cuda')\n"
    out, findings = convert(text, "accelerator")
    assert "torch" in module_names(out) and "TP002" in {f.rule for f in findings}


def test_torch_imported_in_another_function_is_not_bound_where_convert_writes():
    text = "def setup():\n    import torch\n    return torch.zeros(1)\n\n\ndef run(x):\n    return x.to('cuda')\n"
    out, findings = convert(text, "accelerator")
    assert "torch" in module_names(out) and "TP002" in {f.rule for f in findings}


def test_torch_imported_in_the_same_function_is_used_as_it_is():
    text = "def run(x):\n    import torch as th\n    return x.to('cuda')\n"
    out, findings = convert(text, "accelerator")
    assert "th.accelerator.current_accelerator()" in out and "TP002" not in {f.rule for f in findings}


def test_a_typing_only_import_of_the_class_convert_writes_does_not_spell_it():
    """spell() reuses a module-level import's name: never one under TYPE_CHECKING (an annotation's class)."""
    text = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from torch.optim import AdamW\nimport torch\n"
            "from apex.optimizers import FusedAdam\n\n\ndef make(model) -> 'AdamW':\n"
            "    return FusedAdam(model.parameters(), lr=1e-3)\n")
    out, _ = convert(text, "cpu")
    assert "return torch.optim.AdamW(model.parameters()" in out


# ---------------------------------------------------------------- executed
DRIVER = '''import sys
import torch
sys.path.insert(0, sys.argv[1])
import converted
device = sys.argv[2]
torch.manual_seed(0)
model = torch.nn.Linear(4, 2).to(device)
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
before = model.weight.detach().cpu().clone()
converted.train_step_apex(model, optimizer, torch.randn(3, 4, device=device))
assert not torch.equal(before, model.weight.detach().cpu())
print("stepped on", model.weight.device)
'''


def _converted(tmp_path, target: str):
    out, _ = convert(IGNITE, target)
    (tmp_path / "converted.py").write_text(out)
    (tmp_path / "driver.py").write_text(DRIVER)
    return [sys.executable, str(tmp_path / "driver.py"), str(tmp_path)]


@pytest.mark.subprocess
@pytest.mark.torch
def test_the_converted_ignite_shape_imports_and_steps_on_the_cpu(tmp_path):
    pytest.importorskip("torch")
    command = _converted(tmp_path, "cpu")
    imported = run_program([sys.executable, "-c", "import converted"], capture_output=True, text=True, timeout=300,
                           cwd=tmp_path)
    assert imported.returncode == 0, imported.stderr   # NameError: name 'GradScaler' is not defined, before
    p = run_program([*command, "cpu"], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr
    assert "stepped on cpu" in p.stdout


@pytest.mark.torch
@pytest.mark.sim
def test_the_converted_ignite_shape_imports_and_steps_on_a_simulated_npu(tmp_path):
    pytest.importorskip("torch")
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    build = run_program([sys.executable, "-m", "torchport", "sim", "--build"], capture_output=True, text=True,
                        timeout=900, env=env)
    assert build.returncode == 0, build.stderr
    p = run_program([sys.executable, "-m", "torchport", "sim", "--to", "npu", "--", *_converted(tmp_path, "npu"), "npu"],
                    capture_output=True, text=True, timeout=600, env=env)
    assert p.returncode == 0, p.stderr[-2000:]
    assert "stepped on npu:0" in p.stdout
