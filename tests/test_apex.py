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


def calls(findings) -> list:
    """The TP122 findings of converted optimizer calls (not of the apex imports they leave unused)."""
    return [f for f in findings if f.rule == codes.TP122.id and not f.message.startswith("apex import")]


def convert_text(source: str, target: str = "cpu"):
    new, findings, _ = Converter(target).convert_text("train.py", source.encode(), "python")
    return (new.decode() if new is not None else source), findings


@pytest.fixture(scope="module")
def converted(tmp_path_factory):
    out = tmp_path_factory.mktemp("apex") / "cpu"
    result = convert(FIXTURE / "train_apex.py", "cpu", out / "train.py", write_reports=False)
    assert result.summary()["errors"] == 0
    return out / "train.py"


@pytest.mark.subprocess
@pytest.mark.torch
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


@pytest.mark.subprocess
@pytest.mark.torch
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
    assert "opt_level O2" in message and "runs as O1" in message and "static loss scale" in message


def test_imports_that_bind_more_keep_the_rest():
    source = ("import torch\nfrom apex import amp, optimizers\nmodel, opt = amp.initialize(model, opt)\n"
              "opt = optimizers.FusedLAMB(model.parameters(), lr=0.1)\n")
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


@pytest.mark.torch
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


@pytest.mark.torch
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


# ------------------------------------------------------------------ apex.optimizers (TP122)
def apex_step(params, grads, state, kind, t, lr, wd, betas=(0.9, 0.999), eps=1e-8, momentum=0.9, nesterov=True):  # noqa: PLR0913
    """One step of apex's update as its kernels write it (NVIDIA/apex csrc/multi_tensor_adam.cu: ADAM_MODE_0 adds
    wd * p to the gradient, ADAM_MODE_1 to the update; csrc/multi_tensor_sgd_kernel.cu: weight decay before the
    momentum, the first step's momentum is the gradient; csrc/multi_tensor_adagrad.cu: ADAGRAD_MODE_0 adds wd * p
    to the gradient, mode 1 to the update), in plain tensor arithmetic."""
    for i, (p, g) in enumerate(zip(params, grads)):
        if kind.startswith("adagrad"):
            g = g + wd * p if kind == "adagrad" else g
            state[i] = h = state.get(i, torch_zeros(p)) + g * g
            p -= lr * (g / (h.sqrt() + 1e-10) + (wd * p if kind == "adagrad-w" else 0))
            continue
        if kind == "sgd":
            g = g + wd * p
            buf = g.clone() if t == 1 else state[i] * momentum + g
            state[i] = buf
            p -= lr * (g + momentum * buf if nesterov else buf)
            continue
        m, v = state.get(i, (torch_zeros(p), torch_zeros(p)))
        if kind == "adam-l2":
            g = g + wd * p
        m = betas[0] * m + (1 - betas[0]) * g
        v = betas[1] * v + (1 - betas[1]) * g * g
        state[i] = (m, v)
        update = (m / (1 - betas[0] ** t)) / ((v / (1 - betas[1] ** t)).sqrt() + eps)
        if kind == "adamw":
            update = update + wd * p
        p -= lr * update


def torch_zeros(p):
    import torch
    return torch.zeros_like(p)


def apex_reference(namespace, kind, steps, lr, wd) -> dict:
    """The fixture's model trained with apex's update (the converted file's model and data, reused)."""
    import torch
    model = namespace["make_model"]()
    params = list(model.parameters())
    state: dict = {}
    for t, (x, y) in enumerate(namespace["batches"](steps), 1):
        for p in params:
            p.grad = None
        torch.nn.functional.cross_entropy(model(x), y).backward()
        with torch.no_grad():
            apex_step(params, [p.grad for p in params], state, kind, t, lr, wd)
    return {k: v.detach() for k, v in model.state_dict().items()}


@pytest.fixture(scope="module")
def optimizers_cpu(tmp_path_factory):
    out = tmp_path_factory.mktemp("fused") / "fused_optimizers.py"
    result = convert(FIXTURE / "fused_optimizers.py", "cpu", out, write_reports=False)
    assert result.summary()["errors"] == 0
    return out


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("kind, reference, lr, wd", [("adamw", "adamw", 0.01, 0.01), ("adam-l2", "adam-l2", 0.01, 0.01),
                                                     ("adam-default-decay", "adamw", 0.01, 0.0),
                                                     ("sgd", "sgd", 0.1, 1e-3), ("adagrad", "adagrad", 0.1, 1e-3)])
def test_converted_fused_optimizers_train_like_apex(optimizers_cpu, tmp_path, kind, reference, lr, wd):
    """The converted script runs; after 10 steps its parameters are apex's update's to 1e-6, and not those of the
    other reading (Adam for AdamW, weight decay 0.01 for apex's default 0, decoupled decay for Adagrad's L2), so
    the choice of class and arguments is what is tested."""
    torch = pytest.importorskip("torch")
    source = optimizers_cpu.read_text()
    assert not imports_apex(source)
    run = subprocess.run([sys.executable, str(optimizers_cpu), "--optimizer", kind, "--out", str(tmp_path / "p.pt")],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stderr
    ours = torch.load(tmp_path / "p.pt", weights_only=True)
    namespace: dict = {}
    exec(compile(source, "fused_optimizers.py", "exec"), namespace)
    theirs = apex_reference(namespace, reference, 10, lr, wd)
    assert max((ours[k] - theirs[k]).abs().max().item() for k in ours) <= 1e-6
    other = {"adamw": ("adam-l2", wd), "adam-l2": ("adamw", wd), "adam-default-decay": ("adamw", 0.01),
             "sgd": ("sgd", 0.1), "adagrad": ("adagrad-w", wd)}[kind]
    wrong = apex_reference(namespace, other[0], 10, lr, other[1])
    assert max((ours[k] - wrong[k]).abs().max().item() for k in ours) > 1e-5


def test_fused_adam_becomes_adamw_or_adam_with_apex_defaults():
    source = ("from apex.optimizers import FusedAdam\nimport apex.optimizers as ao\n"
              "a = FusedAdam(m.parameters(), lr=1e-3)\n"
              "b = ao.FusedAdam(m.parameters(), 1e-3, adam_w_mode=False, bias_correction=True, capturable=False)\n")
    new, findings = convert_text(source, "mlu")
    assert not imports_apex(new)
    assert "a = torch.optim.AdamW(m.parameters(), lr=1e-3, weight_decay=0.0)" in new
    assert "b = torch.optim.Adam(m.parameters(), 1e-3)" in new
    assert len(calls(findings)) == 2
    assert [f.line for f in findings if f.rule == codes.TP122.id and f not in calls(findings)] == [1, 2]  # imports
    assert codes.TP114.id not in {f.rule for f in findings}  # converted names are not reported as apex's too


@pytest.mark.parametrize("call, why", [
    ("FusedAdam(m.parameters(), adam_w_mode=args.w)", "decided at run time"),
    ("FusedAdam(m.parameters(), 1e-3, False)", "positional"),
    ("FusedAdam(m.parameters(), bias_correction=False)", "always correct"),
    ("FusedAdam(m.parameters(), capturable=True, master_weights=True)", "master copies"),
    ("FusedSGD(m.parameters(), 0.1, wd_after_momentum=True)", "after the momentum"),
    ("FusedAdam(*args)", "* or **"),
    ("FusedAdagrad(m.parameters(), adagrad_w_mode=True)", "decoupled weight decay"),
])
def test_fused_optimizer_arguments_without_a_counterpart_leave_the_call(call, why):
    source = f"from apex.optimizers import FusedAdagrad, FusedAdam, FusedSGD\nopt = {call}\n"
    new, findings = convert_text(source)
    assert new == source
    said = [f.message for f in findings if f.rule == codes.TP122.id]
    assert len(said) == 1 and "not converted" in said[0] and why in said[0]


def test_fused_lamb_is_reported_not_converted():
    source = "import apex\nopt = apex.optimizers.FusedLAMB(model.parameters(), lr=1e-3)\n"
    for target in ("cpu", "npu"):
        new, findings = convert_text(source, target)
        assert new == source
        said = next(f.message for f in findings if f.rule == codes.TP122.id)
        assert "FusedLAMB not converted" in said
        assert ("NpuFusedLamb" in said and "clip_grad_norm_" in said) if target == "npu" else "no torch.optim" in said


def test_npu_gets_torch_npus_fused_optimizers():
    source = ("import torch\nfrom apex.optimizers import FusedAdam, FusedSGD\n"
              "a = FusedAdam(model.parameters(), lr=1e-3)\nb = FusedAdam(model.parameters(), adam_w_mode=False)\n"
              "c = FusedSGD(model.parameters(), 0.1, 0.9, set_grad_none=True)\n")
    new, findings = convert_text(source, "npu")
    assert "import torch_npu" in new and not imports_apex(new)
    assert "a = torch_npu.optim.NpuFusedAdamW(model.parameters(), lr=1e-3, weight_decay=0.0)" in new
    assert "b = torch_npu.optim.NpuFusedAdam(model.parameters())" in new  # its weight_decay defaults to 0
    assert "c = torch_npu.optim.NpuFusedSGD(model.parameters(), 0.1, 0.9)" in new
    assert "fused=True" not in new
    assert all("never re-allocate" in f.message for f in calls(findings))


def test_fused_true_only_where_torch_has_the_kernels():
    source = "from apex.optimizers import FusedSGD\nopt = FusedSGD(model.parameters(), lr=0.1)\n"
    for target, fused in (("cpu", True), ("xpu", True), ("mps", True), ("musa", False), ("accelerator", False)):
        new, _ = convert_text(source, target)
        assert ("fused=True" in new) is fused, target


@pytest.mark.torch
def test_amp_and_optimizers_from_one_import_both_go():
    """One `from apex import amp, optimizers` loses both names in one edit; the fused SGD steps under the
    GradScaler (torch hands a fused optimizer the scale itself)."""
    torch = pytest.importorskip("torch")
    source = ("import torch\nfrom apex import amp, optimizers\ntorch.manual_seed(0)\nmodel = torch.nn.Linear(2, 1)\n"
              "x = torch.randn(4, 2)\nopt = optimizers.FusedSGD(model.parameters(), lr=0.1)\n"
              "model, opt = amp.initialize(model, opt)\nbefore = model.weight.detach().clone()\n"
              "loss = model(x).float().pow(2).mean()\n"
              "with amp.scale_loss(loss, opt) as s:\n    s.backward()\nopt.step()\n")
    new, findings = convert_text(source)
    assert not imports_apex(new) and codes.TP000.id not in {f.rule for f in findings}
    assert "opt = torch.optim.SGD(model.parameters(), lr=0.1, fused=True)" in new
    namespace: dict = {}
    exec(compile(new, "t.py", "exec"), namespace)
    assert not torch.equal(namespace["before"], namespace["model"].weight)  # it stepped


@pytest.mark.parametrize("level, words", [("O2", ["runs as O1", "master weights", "load_state_dict"]),
                                          ("O3", ["model.half()", "remove amp_scaler", "Attempting to unscale FP16"]),
                                          ("args.level", ["decided at run time"])])
def test_amp_initialize_says_what_each_level_and_keyword_means(level, words):
    opt_level = f'"{level}"' if level.startswith("O") else level
    source = (f"from apex import amp\nmodel, opt = amp.initialize(model, opt, opt_level={opt_level}, "
              "keep_batchnorm_fp32=True, master_weights=True, combine_grad=True, scale_window=1000)\n")
    _new, findings = convert_text(source)
    message = next(f.message for f in findings if f.rule == codes.TP120.id and "initialize" in f.message)
    for word in words + ["BatchNorm weights and running statistics stay fp32", "steps the fp32 weights themselves",
                         "NpuFused*", "growth_interval="]:
        assert word in message, word


def test_a_fused_optimizer_used_as_a_value_is_reported():
    """transformers picks the class first (`optimizer_cls = FusedAdam`) and calls it elsewhere: left, and said."""
    source = "from apex.optimizers import FusedAdam\noptimizer_cls = FusedAdam\nopt = optimizer_cls(params, lr=1e-3)\n"
    new, findings = convert_text(source)
    assert new == source
    assert any(f.rule == codes.TP122.id and "used as a value" in f.message for f in findings)


# ---------------------------------------------------------------- the module-level scaler runs after what it needs
STEP = ("\n\ndef step(model, optimizer, x):\n{imports}    loss = model(x).sum()\n"
        "    with amp.scale_loss(loss, optimizer) as scaled:\n        scaled.backward()\n    optimizer.step()\n")


def _order(source: str, *needles: str) -> list:
    return [source.index(n) for n in needles]


@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_the_scaler_of_apex_imported_in_a_function_comes_after_the_registration(target):
    """The registration import and the module-level scaler go after the same import: the import goes first
    (the scaler names torch.<target>, there only once the vendor package is imported)."""
    source, _ = convert_text("import torch" + STEP.format(imports="    from apex import amp\n"), target)
    register, scaler = _order(source, f"import torch_{target}", "amp_scaler = ")
    assert register < scaler < source.index("def step")


@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_apex_imported_before_torch_leaves_its_scaler_after_torch(target):
    source, _ = convert_text("from apex import amp\nimport torch" + STEP.format(imports=""), target)
    assert not imports_apex(source)
    assert _order(source, "import torch\n", "amp_scaler = ") == sorted(_order(source, "import torch\n", "amp_scaler = "))
    compile(source, "train.py", "exec")


def test_a_file_that_imports_torch_only_in_a_function_gets_the_scalers_imports_at_module_level():
    """The module-level scaler names torch: the function's `import torch` is not bound there."""
    source, _ = convert_text('"""Doc."""\nfrom __future__ import annotations' + STEP.format(
        imports="    import torch\n    from apex import amp\n"), "npu")
    lines = source.splitlines()
    top = lines.index("amp_scaler = torch.npu.amp.GradScaler(enabled=False)  # made by amp.initialize's replacement")
    assert {"import torch", "import torch_npu  # noqa: F401"} <= set(lines[:top])
    assert source.startswith('"""Doc."""\nfrom __future__ import annotations\n')


@pytest.mark.torch
def test_the_module_level_scaler_runs_where_apex_came_before_torch():
    pytest.importorskip("torch")
    source, _ = convert_text("from apex import amp\nimport torch" + STEP.format(imports=""))
    namespace: dict = {}
    exec(compile(source, "train.py", "exec"), namespace)
    assert not namespace["amp_scaler"].is_enabled()


# ---------------------------------------------------------------- every edit is listed; amp left off is said
IGNITE_STEP = '''import torch


def supervised_training_step_apex(model, optimizer, loss_fn):
    try:
        from apex import amp as apex_amp
    except ModuleNotFoundError:
        raise ModuleNotFoundError("Please install apex")

    def update(x, y):
        loss = loss_fn(model(x), y)
        with apex_amp.scale_loss(loss, optimizer) as scaled_loss:
            scaled_loss.backward()
        optimizer.step()

    return update
'''


@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_apex_in_a_library_function_lists_its_edits_and_says_amp_stays_off(target):
    """pytorch-ignite 0.5.5's supervised_training_step_apex: the file never calls amp.initialize (its user does,
    in another file), so the scaler convert makes stays disabled.  The module-level scaler and the import that
    became `pass` are listed like every change, and the file says that mixed precision is off."""
    source, findings = convert_text(IGNITE_STEP, target)
    compile(source, "engine.py", "exec")
    changes = {(f.line, f.new) for f in findings if f.rule == codes.TP120.id}
    scaler = next(line for line in source.splitlines() if line.startswith("amp_scaler = "))
    assert (1, scaler.split("  #")[0]) in changes                                 # after `import torch`
    assert (6, "pass") in changes and "    try:\n        pass\n" in source       # the apex import
    said = [f for f in findings if f.rule == codes.TP121.id]
    assert [f.line for f in said] == [6] and said[0].action == "advice"
    assert "mixed precision stays off" in said[0].message and "amp.initialize" in said[0].message


def test_the_global_declaration_is_listed():
    source, findings = convert_text((FIXTURE / "hf_style.py").read_text())
    assert "global amp_scaler" in source
    assert [f for f in findings if f.rule == codes.TP120.id and f.new == "global amp_scaler"]
    assert codes.TP121.id not in {f.rule for f in findings}   # it calls amp.initialize: no advice
