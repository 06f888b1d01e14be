"""apex.amp converted to torch.amp (TP120): the apex training fixture, converted for the CPU, trains 5 steps
like the hand-written torch.amp version, saves and reloads its scaler state, and is left alone by a second
conversion; files whose apex use has no torch.amp form are left and say why (TP121)."""
import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.api import convert
from torchport.converter.run import Converter
from torchport.core import codes

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "apex"


def losses(text: str) -> list:
    return [float(v) for v in re.findall(r"loss (-?\d+\.\d+)", text)]


def imports_apex(source: str) -> bool:
    return any(isinstance(n, ast.Import) and any(a.name.split(".")[0] == "apex" for a in n.names)
               or isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[0] == "apex"
               for n in ast.walk(ast.parse(source)))


def convert_text(source: str, target: str = "cpu"):
    new, findings, _ = Converter(target).convert_text("train.py", source.encode(), "python")
    return (new.decode() if new is not None else source), findings


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("apex") / "cpu"
    result = convert(FIXTURE / "train_apex.py", "cpu", out / "train.py", write_reports=False)
    assert result.summary()["errors"] == 0
    return out / "train.py"


def test_converted_script_has_no_apex_and_trains_like_the_hand_written_version(converted, tmp_path):
    pytest.importorskip("torch")
    source = converted.read_text()
    assert not imports_apex(source) and "amp.scale_loss" not in source
    run = subprocess.run([sys.executable, str(converted), "--checkpoint", str(tmp_path / "c.pt")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    reference = subprocess.run([sys.executable, str(FIXTURE / "train_amp_cpu.py"), "--checkpoint",
                                str(tmp_path / "r.pt")], capture_output=True, text=True, timeout=300)
    assert reference.returncode == 0, reference.stderr
    ours, theirs = losses(run.stdout), losses(reference.stdout)
    assert len(ours) == len(theirs) == 5
    assert max(abs(a - b) for a, b in zip(ours, theirs)) <= 1e-4
    assert "resumed c.pt" in run.stdout  # saved and loaded the scaler's state with the model's

    import torch
    saved = torch.load(tmp_path / "c.pt", weights_only=True)
    assert {"scale", "growth_factor", "backoff_factor", "growth_interval", "_growth_tracker"} <= set(saved["amp"])


def test_opt_level_O0_runs_in_full_precision(converted, tmp_path):
    pytest.importorskip("torch")
    amp = subprocess.run([sys.executable, str(converted), "--checkpoint", str(tmp_path / "a.pt"), "--steps", "2"],
                         capture_output=True, text=True, timeout=300)
    fp32 = subprocess.run([sys.executable, str(converted), "--checkpoint", str(tmp_path / "b.pt"), "--steps", "2",
                           "--opt-level", "O0"], capture_output=True, text=True, timeout=300)
    assert amp.returncode == fp32.returncode == 0, fp32.stderr
    assert losses(amp.stdout) != losses(fp32.stdout)  # autocast was on, then off


def test_a_second_conversion_changes_nothing(converted):
    new, findings, _ = Converter("cpu").convert_text("train.py", converted.read_bytes(), "python")
    assert new is None, new.decode()
    assert not [f for f in findings if f.rule in (codes.TP120.id, codes.TP121.id)]


@pytest.mark.parametrize("target", ["npu", "mlu", "musa", "xpu", "mps", "accelerator"])
def test_every_target_gets_its_scaler_and_autocast(target):
    source, findings = convert_text((FIXTURE / "train_apex.py").read_text(), target)
    assert not imports_apex(source)
    compile(source, "train.py", "exec")
    assert "amp_scaler = " in source and "enabled=amp_scaler.is_enabled()" in source
    assert "global amp_scaler" in source  # made in main, used in train
    assert {codes.TP120.id} <= {f.rule for f in findings} and codes.TP121.id not in {f.rule for f in findings}


@pytest.mark.parametrize("use", ["amp.register_float_function(torch, \"sigmoid\")", "if amp is None:\n    pass",
                                 "with amp.scale_loss(loss, optimizer) as s:\n    s.backward()\n    log(s)"])
def test_uses_without_a_torch_amp_form_leave_the_file_and_say_why(use):
    source = f"from apex import amp\nmodel, optimizer = amp.initialize(model, optimizer)\n{use}\n"
    new, findings = convert_text(source)
    assert new == source
    why = [f for f in findings if f.rule == codes.TP121.id]
    assert len(why) == 1 and "not converted" in why[0].message


def test_static_loss_scale_and_O2_are_said():
    source = ("from apex import amp\nmodel, opt = amp.initialize(model, opt, opt_level=\"O2\", loss_scale=128.0)\n"
              "with amp.scale_loss(loss, opt) as s:\n    s.backward()\nopt.step()\n")
    new, findings = convert_text(source)
    assert "init_scale=128.0" in new and "enabled=True" in new
    message = next(f.message for f in findings if f.rule == codes.TP120.id and "initialize" in f.message)
    assert "O2/O3" in message and "static loss scale" in message


def test_imports_that_bind_more_keep_the_rest():
    source = ("import torch\nfrom apex import amp, optimizers\nmodel, opt = amp.initialize(model, opt)\n"
              "opt = optimizers.FusedSGD(model.parameters(), lr=0.1)\n")
    new, _findings = convert_text(source)
    assert "from apex import optimizers" in new and "amp.initialize" not in new


def test_apex_used_only_under_a_flag_keeps_running_without_it():
    """The transformers-examples shape: a disabled module-level scaler until amp.initialize's replacement makes
    the real one, the forward under autocast outside the `if args.fp16:`, master params unscaled before clipping."""
    source, findings = convert_text((FIXTURE / "hf_style.py").read_text())
    compile(source, "hf_style.py", "exec")
    assert not imports_apex(source)
    assert 'amp_scaler = torch.amp.GradScaler("cpu", enabled=False)' in source  # module level, before train()
    assert source.index("enabled=False") < source.index("def train")
    assert "global amp_scaler" in source and 'enabled=args.fp16_opt_level != "O0"' in source
    unscale = source.index("amp_scaler.unscale_(optimizer)")
    assert unscale < source.index("clip_grad_norm_([p for group in optimizer.param_groups")
    assert source.index('with torch.autocast("cpu"') < source.index("loss = outputs[0]")
    assert codes.TP121.id not in {f.rule for f in findings}


def test_the_flag_off_path_runs(tmp_path):
    """With --fp16 off, the converted loop runs on the disabled scaler: a plain fp32 step."""
    torch = pytest.importorskip("torch")
    source, _ = convert_text((FIXTURE / "hf_style.py").read_text())
    namespace: dict = {}
    exec(compile(source, "hf_style.py", "exec"), namespace)

    class Args:
        fp16, fp16_opt_level, device, gradient_accumulation_steps, max_grad_norm = False, "O1", "cpu", 1, 1.0

    class Model(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(3, 1)

        def forward(self, x):
            return (self.lin(x).pow(2).mean(),)

    torch.manual_seed(0)
    model = Model()
    before = model.lin.weight.detach().clone()
    optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
    namespace["train"](Args, model, optimizer, [{"x": torch.randn(4, 3)}])
    assert not torch.equal(before, model.lin.weight)  # it stepped
    Args.fp16 = True
    namespace["train"](Args, model, optimizer, [{"x": torch.randn(4, 3)}])  # and with the scaler on


def test_fused_layer_norm_becomes_layer_norm_with_its_arguments_and_parameters():
    torch = pytest.importorskip("torch")
    source = ("import torch\nfrom apex.normalization import FusedLayerNorm\n"
              "from apex.normalization.fused_layer_norm import FusedLayerNorm as FLN\n"
              "a = FusedLayerNorm(8, eps=1e-6)\nb = FLN((2, 8), elementwise_affine=False)\n")
    new, _findings = convert_text(source)
    assert not imports_apex(new)
    namespace: dict = {}
    exec(compile(new, "m.py", "exec"), namespace)
    a, b = namespace["a"], namespace["b"]
    assert type(a) is torch.nn.LayerNorm and a.eps == 1e-6 and set(a.state_dict()) == {"weight", "bias"}
    assert b.normalized_shape == (2, 8) and b.weight is None


def test_a_scale_loss_whose_step_is_elsewhere_is_left():
    """transformers' Trainer scales in one method and steps in another: converting the scale alone would step
    with scaled gradients (apex unscaled them when its context closed), so the file is left and says why."""
    source = ("from apex import amp\n\nclass T:\n    def setup(self, model):\n"
              "        model, self.optimizer = amp.initialize(model, self.optimizer)\n\n"
              "    def backward(self, loss):\n        with amp.scale_loss(loss, self.optimizer) as scaled_loss:\n"
              "            scaled_loss.backward()\n\n    def step(self):\n        self.optimizer.step()\n")
    new, findings = convert_text(source)
    assert new == source
    assert any(f.rule == codes.TP121.id and "self.optimizer.step()" in f.message for f in findings)


def test_an_attribute_optimizer_stepped_in_the_same_function_is_converted():
    source = ("from apex import amp\n\nclass T:\n    def train(self, model, loss_fn, x):\n"
              "        model, self.opt = amp.initialize(model, self.opt)\n        loss = loss_fn(model(x))\n"
              "        with amp.scale_loss(loss, self.opt) as scaled_loss:\n            scaled_loss.backward()\n"
              "        self.opt.step()\n")
    new, _findings = convert_text(source)
    assert "amp_scaler.step(self.opt)" in new and "amp_scaler.update()" in new
    compile(new, "t.py", "exec")


def test_the_corpus_invariant_accepts_exactly_the_rebinding():
    """bench/corpus.py checks that no user identifier changes; TP120 removes `scaled_loss` and adds amp_scaler."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "bench"))
    from corpus import apex_rebinding, defined_names

    old = (FIXTURE / "train_apex.py").read_text()
    new, _findings = convert_text(old)
    old_tree, new_tree = ast.parse(old), ast.parse(new)
    assert defined_names(old_tree) != defined_names(new_tree) and apex_rebinding(old_tree, new_tree)
    renamed = ast.parse(new.replace("def make_model", "def build_model").replace("make_model()", "build_model()"))
    assert not apex_rebinding(old_tree, renamed)
