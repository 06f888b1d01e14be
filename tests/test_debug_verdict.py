"""`torchport compare` gives true verdicts on real dumps of two runs (issue 15, items 6-8): a last layer
scaled by 1.5 and an input doubled at step 1 diverge, in statistics and in tensor mode, at the right
step; an unperturbed pair and bf16/fp16 runs against fp32 agree; `debug dump` and `debug nan` run an
unmodified script; `nonfinite_outputs` does not depend on check_every."""
import csv
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch
nn = torch.nn

from torchport.cli import main  # noqa: E402
from torchport.debug import NanInfTracker, compare_runs, dump  # noqa: E402
from torchport.debug.verdict import RUN_TOLERANCES, statistic_errors, tensor_errors  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
from compare_matrix import MLP, run_branches, run_conv  # noqa: E402  (the bench's models and pairs, shared)

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
MODES = {"tensors": True, "statistics": False}


def train(folder, tensors, *, scale_last=1.0, double_at=None, dtype=torch.float32, autocast=False, steps=3):
    """Dump `steps` SGD steps of MLP; the perturbations are the divergences to find."""
    torch.manual_seed(0)
    model = MLP()
    with torch.no_grad():
        model.head.weight.mul_(scale_last)
    model = model.to(dtype)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    torch.manual_seed(1)
    batches = [torch.randn(8, 4) for _ in range(steps)]
    with dump(folder, model, tensors=tensors) as d:
        for step, x in enumerate(batches):
            if step == double_at:
                x = x * 2
            opt.zero_grad()
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=autocast):
                out = model(x.to(dtype))
            out.float().pow(2).mean().backward()
            opt.step()
            d.step()
    return folder


def compare_cli(capsys, a, b, *extra):
    code = main(["compare", str(a), str(b), *extra])
    return code, capsys.readouterr().out


def worst_printed(out: str) -> float:
    line = next(line for line in out.splitlines() if "worst relative error:" in line)
    return float(line.split("worst relative error:")[1].split()[0])


# ---------------------------------------------------------------- the acceptance pairs
@pytest.mark.parametrize("mode", MODES)
def test_unperturbed_pair_agrees(tmp_path, capsys, mode):
    a, b = train(tmp_path / "a", MODES[mode]), train(tmp_path / "b", MODES[mode])
    result = compare_runs(a, b)
    assert result.failed == [] and result.only_a == result.only_b == 0
    assert {p.source for p in result.compared} == {mode}
    phases = {p.a["phase"] for p in result.compared}
    assert phases == {"forward", "backward", "param", "grad"}, "ops, parameters and gradients are compared"
    assert {p.step for p in result.compared} == {0, 1, 2}
    code, out = compare_cli(capsys, a, b)
    assert code == 0 and "no divergence" in out and worst_printed(out) == 0.0
    assert "every compared output is identical" in out, "a worst op among equals names nothing"


@pytest.mark.parametrize("mode", MODES)
def test_last_layer_scaled_by_1_5_diverges(tmp_path, capsys, mode):
    """Before: tensor mode said 'no divergence', exit 0 (cosine stays 1 when a tensor is only scaled)."""
    a = train(tmp_path / "a", MODES[mode])
    b = train(tmp_path / "b", MODES[mode], scale_last=1.5)
    first = compare_runs(a, b).first_divergence
    assert first is not None and first.source == mode
    assert (first.a["module"], first.a["op"], first.a["phase"], first.step) == \
           ("head", "aten::addmm.default", "forward", 0), "the first op the scaled weight touches"
    assert first.error > 10 * first.tolerance
    code, out = compare_cli(capsys, a, b)
    assert code == 1, out
    assert "first divergence: head/aten::addmm.default/forward/0/0 at step 0" in out
    assert worst_printed(out) > 0.1


@pytest.mark.parametrize("mode", MODES)
def test_input_doubled_at_step_1_diverges_at_step_1(tmp_path, capsys, mode):
    """Before: tensors were keyed by name only, so step 2's overwrote steps 0 and 1, and a 2x difference
    passed msprobe's rule (cosine 1): 'no divergence'."""
    a = train(tmp_path / "a", MODES[mode])
    b = train(tmp_path / "b", MODES[mode], double_at=1)
    result = compare_runs(a, b)
    first = result.first_divergence
    assert first is not None and first.step == 1
    assert first.a["name"] == "fc1/aten::addmm.default/forward/0/0", "the first op fed the doubled input"
    assert 0.5 < first.error < 1.5, "W(2x) + b against Wx + b: about |Wx| / |Wx + b|"
    assert all(p.passed for p in result.compared if p.step == 0), "step 0 is the same in both runs"
    code, out = compare_cli(capsys, a, b, "-o", str(tmp_path / "r"))
    assert code == 1 and f"first divergence: {first.a['name']} at step 1" in out
    # the input's doubling is an op only run B called: what such outputs are is said, with the op
    assert result.only_b == 1 and "ops one run called and the other did not" in out and "aten::mul.Tensor x1" in out
    with open(tmp_path / "r" / "compare.csv", newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert {r["Result"] for r in rows if r["step"] == "0"} == {"pass"}
    assert "FAIL" in {r["Result"] for r in rows if r["step"] == "1"}


def test_tensor_files_hold_each_step(tmp_path):
    """Each entry reads its own step's tensor: step 0's first output is step 0's input, not step 2's."""
    a = train(tmp_path / "a", True)
    entries = [json.loads(line) for line in (a / "rank0" / "ops.jsonl").read_text().splitlines()]
    firsts = [e for e in entries if e["name"] == "fc1/aten::addmm.default/forward/0/0"]
    assert [e["step"] for e in firsts] == [0, 1, 2]
    assert len({e["file"] for e in firsts}) == 3
    for e in firsts:
        t = torch.load(a / "rank0" / e["file"], weights_only=True)[e["name"]]
        assert float(t.norm()) == pytest.approx(e["norm"], rel=1e-6)


def test_a_tensor_named_for_two_steps_is_not_trusted(tmp_path):
    """A dump of the older format (every step in one file, names repeating): which step the tensor holds
    cannot be known, so those entries are compared from their statistics."""
    a = train(tmp_path / "a", True, steps=2)
    lines = [json.loads(line) for line in (a / "rank0" / "ops.jsonl").read_text().splitlines()]
    merged = {}
    for e in lines:
        merged.update(torch.load(a / "rank0" / e["file"], weights_only=True))  # step 1 overwrites step 0, as before
        e["file"] = "old.pt"
    torch.save(merged, a / "rank0" / "old.pt")
    (a / "rank0" / "ops.jsonl").write_text("".join(json.dumps(e) + "\n" for e in lines))
    b = train(tmp_path / "b", True, steps=2)
    result = compare_runs(a, b)
    once = {e["name"] for e in lines if [x["name"] for x in lines].count(e["name"]) == 1}
    assert once, "step 0 has ops step 1 has not: SGD creating its momentum buffers (clone)"
    assert {p.source for p in result.compared if p.a["name"] not in once} == {"statistics"}
    assert {p.source for p in result.compared if p.a["name"] in once} == {"tensors"}
    assert result.failed == []


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("low", ["bfloat16", "float16", "bf16 autocast"])
def test_low_precision_against_fp32_has_no_false_failure(tmp_path, capsys, mode, low):
    a = train(tmp_path / "a", MODES[mode])
    kw = dict(autocast=True) if low == "bf16 autocast" else dict(dtype=getattr(torch, low))
    b = train(tmp_path / "b", MODES[mode], **kw)
    result = compare_runs(a, b)
    assert result.failed == [], [(p.a["name"], p.step, p.error, p.tolerance) for p in result.failed]
    worst = result.worst
    assert worst.error > 1e-4, "the runs really differ: the comparison compared"
    expected = RUN_TOLERANCES["float16" if low == "float16" else "bfloat16"][0]
    assert worst.tolerance == expected
    code, out = compare_cli(capsys, a, b)
    assert code == 0 and "no divergence" in out
    # the same pair with a float32 tolerance forced: the error is real, and it would fail
    code, _ = compare_cli(capsys, a, b, "--rtol", str(RUN_TOLERANCES["float32"][0] / 100))
    assert code == 1


# ---------------------------------------------------------------- the verdict itself
def entry(values: torch.Tensor, step=0, phase="grad") -> dict:
    x = values.double()
    return {"name": "m/weight/grad", "module": "m", "op": "weight", "phase": phase, "output": 0, "step": step,
            "dtype": "float32", "shape": list(values.shape), "min": float(x.min()), "max": float(x.max()),
            "mean": float(x.mean()), "norm": float(x.norm()), "nan": 0, "inf": 0}


def test_a_small_gradient_is_held_to_its_own_scale():
    """A fixed 1e-5 absolute tolerance would pass a 33% error in a gradient of 1e-6."""
    torch.manual_seed(0)
    grad = torch.randn(64) * 1e-6
    wrong = grad * 1.33
    m, error = tensor_errors(wrong, grad, floor=0.0)
    assert error == pytest.approx(0.33, rel=1e-6) and m.max_abs < 1e-5
    _, stat_error = statistic_errors(entry(wrong), entry(grad), floor=0.0)
    assert stat_error == pytest.approx(0.33, rel=1e-6)
    # noise in a tensor far below its step's scale (floor from the step's largest rms) is not a divergence
    noise_a, noise_b = torch.randn(64) * 1e-9, torch.randn(64) * 1e-9
    _, error = tensor_errors(noise_b, noise_a, floor=1e-2 * 1.0)
    assert error < 1e-6


def test_rounding_noise_far_below_its_step_is_no_divergence(tmp_path):
    """A conv bias in front of a batch norm has a gradient that is zero but for rounding: float32 and
    float64 runs disagree on it completely (error 1 against its own scale), which the step's floor absorbs."""
    def conv_bn(folder, dtype):
        torch.manual_seed(0)
        model = nn.Sequential(nn.Conv2d(3, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(), nn.Flatten(),
                              nn.Linear(8 * 36, 2)).to(dtype)
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        torch.manual_seed(1)
        with dump(folder, model, tensors=True) as d:
            for _ in range(2):
                opt.zero_grad()
                model(torch.randn(4, 3, 6, 6).to(dtype)).float().pow(2).mean().backward()
                opt.step()
                d.step()
        return folder

    result = compare_runs(conv_bn(tmp_path / "a", torch.float32), conv_bn(tmp_path / "b", torch.float64))
    assert result.failed == [], [(p.a["name"], p.error) for p in result.failed]
    bias = next(p for p in result.compared if p.a["name"] == "0/bias/grad")
    a = torch.load(tmp_path / "a" / "rank0" / bias.a["file"], weights_only=True)["0/bias/grad"].double()
    b = torch.load(tmp_path / "b" / "rank0" / bias.b["file"], weights_only=True)["0/bias/grad"].double()
    assert float((b - a).norm() / a.norm()) > 0.1, "against its own scale the noise disagrees"
    assert bias.error < bias.tolerance


def test_cosine_is_the_cosine(tmp_path, capsys):
    a = train(tmp_path / "a", True)
    b = train(tmp_path / "b", True, scale_last=1.5)
    result = compare_runs(a, b)
    ta = torch.load(a / "rank0" / "tensors_0.pt", weights_only=True)
    tb = torch.load(b / "rank0" / "tensors_0.pt", weights_only=True)
    for p in [p for p in result.compared if p.step == 0][:40]:
        x, y = ta[p.a["name"]].double().flatten(), tb[p.b["name"]].double().flatten()
        if x.norm() > 0 and y.norm() > 0:
            assert p.metrics.cosine == pytest.approx(float(torch.nn.functional.cosine_similarity(x, y, dim=0)),
                                                     abs=1e-9)
    assert main(["compare", str(train(tmp_path / "sa", False)), str(train(tmp_path / "sb", False)),
                 "-o", str(tmp_path / "r")]) == 0
    with open(tmp_path / "r" / "compare.csv", newline="", encoding="utf-8") as f:
        assert {r["Cosine"] for r in csv.DictReader(f)} == {""}, "statistics cannot give a cosine: left empty"


def test_shape_and_nan_differences_fail_even_with_a_loose_tolerance(tmp_path):
    _, error = tensor_errors(torch.ones(3), torch.ones(4), floor=0.0)
    assert math.isnan(error)
    nan_b = torch.tensor([1.0, float("nan"), 2.0])
    m, _ = tensor_errors(nan_b, torch.tensor([1.0, 5.0, 2.0]), floor=0.0)
    assert m.nonfinite_mismatch


# ---------------------------------------------------------------- debug dump / debug nan, no source edits
SCRIPT = """import os, torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
with torch.no_grad():
    model[2].weight.mul_(float(os.environ.get("SCALE", "1")))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
torch.manual_seed(1)
for step in range(4):
    opt.zero_grad()
    model(torch.randn(4, 4)).pow(2).mean().backward()
    opt.step()
    print("step", step)
"""


def torchport(*argv, env=None, cwd=None):
    return subprocess.run([sys.executable, "-m", "torchport", *argv], capture_output=True, text=True,
                          env=env or ENV, cwd=cwd, timeout=300)


@pytest.mark.subprocess
def test_debug_dump_runs_an_unmodified_script_and_compare_judges_it(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    p = torchport("debug", "dump", "-o", str(tmp_path / "a"), "--tensors", "--", "python", str(script))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["step", "0", "step", "1", "step", "2", "step", "3"]
    assert "in 4 steps (a step: optimizer.step())" in p.stderr
    entries = [json.loads(line) for line in (tmp_path / "a" / "rank0" / "ops.jsonl").read_text().splitlines()]
    grads = {(e["name"], e["step"]) for e in entries if e["phase"] == "grad"}
    assert grads == {(f"{m}/{w}/grad", s) for m in ("0", "2") for w in ("weight", "bias") for s in range(4)}
    assert {e["name"] for e in entries if e["phase"] == "param"} == {"0/weight/param", "0/bias/param",
                                                                    "2/weight/param", "2/bias/param"}
    assert {e["module"] for e in entries if e["op"] == "aten::addmm.default"} == {"0", "2"}

    p = torchport("debug", "dump", "-o", str(tmp_path / "b"), "--tensors", "--", "python", str(script),
                  env=dict(ENV, SCALE="1.5"))
    assert p.returncode == 0, p.stderr
    p = torchport("compare", str(tmp_path / "a"), str(tmp_path / "b"))
    assert p.returncode == 1 and "first divergence: 2/aten::addmm.default/forward/0/0 at step 0" in p.stdout
    p = torchport("compare", str(tmp_path / "a"), str(tmp_path / "a"))
    assert p.returncode == 0 and "no divergence" in p.stdout


@pytest.mark.subprocess
def test_debug_dump_step_range_ends_the_script(tmp_path):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    p = torchport("debug", "dump", "-o", str(tmp_path / "d"), "--steps", "1-2", "--", "python", str(script))
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["step", "0", "step", "1"], "ended at step 2's optimizer.step(), before its print"
    steps = {json.loads(line)["step"] for line in (tmp_path / "d" / "rank0" / "ops.jsonl").read_text().splitlines()}
    assert steps == {1, 2}


INFERENCE = """import torch
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.ReLU(), torch.nn.Linear(8, 1)).eval()
with torch.no_grad():
    for i in range(5):
        model(torch.randn(2, 4) * (float("inf") if i == 3 else 1.0))
"""


@pytest.mark.subprocess
def test_an_inference_script_steps_at_each_forward(tmp_path):
    script = tmp_path / "infer.py"
    script.write_text(INFERENCE)
    p = torchport("debug", "dump", "-o", str(tmp_path / "d"), "--", "python", str(script))
    assert p.returncode == 0 and "in 5 steps (a step: top-level module forward" in p.stderr, p.stderr
    p = torchport("debug", "nan", "--", "python", str(script))
    assert p.returncode == 1
    assert "first NaN/Inf from finite inputs: aten::mul.Tensor in (top) (forward, step 3" in p.stderr, p.stderr


NAN_SCRIPT = """import torch
class SqrtOfRelu(torch.nn.Module):
    def forward(self, x):
        return torch.sqrt(torch.relu(x))
torch.manual_seed(0)
model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), SqrtOfRelu(), torch.nn.Linear(8, 1))
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    loss = model(torch.randn(16, 4) + (0 if step < 2 else float("nan"))).sum()
    loss.backward()
    opt.step()
"""


@pytest.mark.subprocess
def test_debug_nan_names_op_module_phase_and_step(tmp_path):
    script = tmp_path / "nan_train.py"
    script.write_text(NAN_SCRIPT)
    p = torchport("debug", "nan", "--", "python", str(script))
    assert p.returncode == 1, p.stderr
    assert "first NaN/Inf from finite inputs: aten::div.Tensor in 2 (backward, step 0" in p.stderr
    p = torchport("debug", "nan", "--steps", "2", "--", "python", str(script))
    assert "first NaN/Inf from finite inputs: aten::add.Tensor in (top) (forward, step 2" in p.stderr, p.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("spelling", ["python", "python{v}", "env", "executable"])
def test_any_spelling_of_this_interpreter_runs_the_script(tmp_path, spelling):
    script = tmp_path / "train.py"
    script.write_text(SCRIPT)
    words = {"python": ["python"], "python{v}": [f"python{sys.version_info[0]}.{sys.version_info[1]}"],
             "env": ["/usr/bin/env", "python"], "executable": [sys.executable]}[spelling]
    p = torchport("debug", "dump", "-o", str(tmp_path / "d"), "--steps", "0", "--", *words, str(script))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "d" / "rank0" / "ops.jsonl").is_file()


@pytest.mark.parametrize("command,expected", [
    (["./run.sh"], "run.sh is not a Python script (#!/bin/sh)"),
    (["python", "notes.txt"], "notes.txt is not a Python script (line 1: invalid syntax)"),
    (["bash", "run.sh"], "bash is a program, not a Python script"),
    (["python", "missing.py"], "script not found: missing.py"),
    (["python", "-c", "print(1)"], "not -c CODE"),
    ([], "needs a command after --"),
])
def test_debug_refuses_what_is_not_a_python_script_in_one_line(tmp_path, capsys, monkeypatch, command, expected):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run.sh").write_text("#!/bin/sh\necho hi && exit 0\n")
    (tmp_path / "notes.txt").write_text("not python at all\n")
    for sub in (["dump", "-o", "d"], ["nan"]):
        code = main(["debug", *sub, "--", *command])
        err = capsys.readouterr().err
        assert code == 2 and len(err.strip().splitlines()) == 1 and expected in err, err
    assert main(["debug", "dump", "-o", "d", "--steps", "2-1", "--", "python", "run.sh"]) == 2
    assert "the last step comes before the first" in capsys.readouterr().err


# ---------------------------------------------------------------- NaN counting
@pytest.mark.parametrize("check_every", [1, 5, 256])
def test_nonfinite_outputs_counts_every_one_whatever_check_every(check_every):
    """Before: after the culprit was found no op was checked, so the count depended on check_every
    (1: only the culprit's batch)."""
    torch.manual_seed(0)
    model = nn.Sequential(nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 1))
    with NanInfTracker(model, check_every=check_every) as tracker:
        for step in range(3):
            model(torch.randn(2, 4) + (float("nan") if step == 1 else 0.0))
            tracker.step()
    assert tracker.first["op"] == "aten::add.Tensor" and tracker.first["step"] == 1
    assert tracker.nonfinite_outputs == 4, "the add, then the three addmm of step 1"


@pytest.mark.parametrize("mode", MODES)
def test_reduction_order_noise_and_a_bf16_round_trip(tmp_path, capsys, mode):
    """issue 32 item 7: a bf16 round trip of one fp32 weight before step 2 was no divergence at the default
    tolerance (float32's 1e-2 against float64); two float32 runs now share a tolerance measured on reduction-order
    noise (1 thread against 2 differs by about 6e-6), so the round trip (1.5e-3 on that weight) is found and the
    legal pair is not."""
    a = run_conv(tmp_path / "a", MODES[mode], threads=2)
    legal = compare_runs(a, run_conv(tmp_path / "b", MODES[mode], threads=1))
    assert legal.failed == [] and legal.worst.error > 0, "the runs differ by reduction order, and pass"
    faulty = compare_runs(a, run_conv(tmp_path / "c", MODES[mode], threads=2, round_trip_at=2))
    first = faulty.first_divergence
    assert first is not None and first.step == 2, [(p.a["name"], p.step, p.error) for p in faulty.failed[:3]]
    assert first.a["module"] == "fc2", "found where it is, not only where it has grown past float64's tolerance"
    assert all(p.passed for p in faulty.compared if p.step < 2)
    code, out = compare_cli(capsys, a, tmp_path / "c")
    assert code == 1 and "at step 2" in out


def test_reordered_branches_are_aligned_by_what_they_are_and_a_fault_is_blamed_on_its_branch(tmp_path):
    """issue 32 item 8: with two parallel branches run in the other order, 26 ops on each side were never compared
    (aligned by sequence only), and a real fault in branch pb was blamed on the sum of the branches."""
    a = run_branches(tmp_path / "a", True)
    same = compare_runs(a, run_branches(tmp_path / "b", True, swap=True))
    assert same.only_a == same.only_b == 0 and same.failed == [], (same.only_a, same.only_b)
    faulty = compare_runs(a, run_branches(tmp_path / "c", True, swap=True, fault=True))
    assert faulty.only_a == faulty.only_b == 0
    first = faulty.first_divergence
    assert first is not None and first.a["module"].startswith("pb"), first.a["name"]


def test_the_summary_says_which_steps_were_forwards_before_the_first_optimizer(tmp_path):
    """A new user's trial (torchdiffeq 0.2.5): data made by forwards of a module before any optimizer existed counted
    as 2487 steps, and the summary said 'a step: optimizer.step()' for all 2490."""
    from torchport.debug.script import dump_script

    script = tmp_path / "fit.py"
    script.write_text("import torch\nf = torch.nn.Linear(2, 2)\nwith torch.no_grad():\n"
                      "    data = [f(torch.ones(1, 2)) for _ in range(5)]\n"
                      "opt = torch.optim.SGD(f.parameters(), lr=0.1)\n"
                      "for y in data[:2]:\n    opt.zero_grad()\n    (f(torch.ones(1, 2)) - y).pow(2).sum().backward()\n"
                      "    opt.step()\n")
    code, dumper, step = dump_script(["python", str(script)], tmp_path / "d")
    assert code == 0 and "optimizer.step()" in step and "the first 5 were top-level module forwards" in step, step


def test_a_gradient_that_diverges_is_named_before_the_parameter_it_updated(tmp_path):
    """A new user's trial (schedulefree 1.4.1): compare named a bias's parameter as the first divergence, ahead of
    the gradient of the same step that caused it."""
    def run(folder, scale):
        torch.manual_seed(0)
        model = MLP()
        opt = torch.optim.SGD(model.parameters(), lr=0.1)
        with dump(folder, model, tensors=True) as d:
            opt.zero_grad()
            model(torch.ones(2, 4)).pow(2).mean().backward()
            with torch.no_grad():
                model.head.bias.grad *= scale
            opt.step()
            d.step()
        return folder

    first = compare_runs(run(tmp_path / "a", 1.0), run(tmp_path / "b", 3.0)).first_divergence
    assert first is not None and first.a["module"] == "head" and first.a["phase"] == "grad", first.a


def test_a_script_that_fails_is_not_reported_as_a_clean_search(tmp_path, capsys):
    """A new user's trial (torchkge 0.17.7): `debug nan` said "no op produced NaN/Inf" after the script had crashed,
    and `debug dump` suggested comparing the partial dump."""
    script = tmp_path / "boom.py"
    script.write_text("import torch\nx = torch.ones(2) * 2\nraise RuntimeError('boom')\n")
    assert main(["debug", "nan", "--", "python", str(script)]) == 1
    assert "the script failed (exit 1) before its end" in capsys.readouterr().err
    assert main(["debug", "dump", "-o", str(tmp_path / "d"), "--", "python", str(script)]) == 1
    err = capsys.readouterr().err
    assert "the script failed (exit 1)" in err and "next: torchport compare" not in err
