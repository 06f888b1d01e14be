"""torchport.debug on the CPU: recording, compare with a reference (fault injection, mixed precision),
NaN/Inf tracking, dump and compare of two runs, and their CLI wrappers."""
import json
import os
import subprocess
import sys
import warnings

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")

pytestmark = pytest.mark.torch
nn = torch.nn

from torch.utils._python_dispatch import TorchDispatchMode  # noqa: E402

from torchport.backends import load_target  # noqa: E402
from torchport.debug import (  # noqa: E402
    CompareFailure,
    CompareWithReference,
    NanInfTracker,
    OpSelection,
    Reporting,
    Tolerance,
    compare_runs,
    compare_with_reference,
    dump,
    record_ops,
    replay,
    write_comparison,
)
from torchport.debug.compare import run_on_reference  # noqa: E402
from torchport.kb.operators import check, load_ops_file  # noqa: E402

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")


class ResBlock(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1, self.bn1 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)
        self.conv2, self.bn2 = nn.Conv2d(c, c, 3, padding=1, bias=False), nn.BatchNorm2d(c)

    def forward(self, x):
        y = torch.relu(self.bn1(self.conv1(x)))
        return torch.relu(x + self.bn2(self.conv2(y)))


class Net(nn.Module):
    """A ResNet block and a transformer block: the 'small real model' of the tests."""

    def __init__(self):
        super().__init__()
        self.stem = nn.Conv2d(3, 16, 3, padding=1)
        self.backbone = nn.Sequential(ResBlock(16))
        self.attn = nn.TransformerEncoderLayer(16, 4, 32, dropout=0.0, batch_first=True)
        self.head = nn.Linear(16, 10)

    def forward(self, x):
        f = self.backbone(self.stem(x))
        return self.head(self.attn(f.flatten(2).transpose(1, 2)).mean(1))


QUIET = Reporting(quiet=True)


def model_and_input():
    torch.manual_seed(0)
    return Net(), torch.randn(2, 3, 8, 8)


class PerturbAddmm(TorchDispatchMode):
    """Fault injection: the 'device under test' adds 1e-2 to every aten.addmm result."""

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        return out + 1e-2 if func is torch.ops.aten.addmm.default else out


# ---------------------------------------------------------------- compare with a reference
def test_fault_injection_names_the_op_and_module(tmp_path):
    model, x = model_and_input()
    with PerturbAddmm():
        reporting = Reporting(log_dir=tmp_path / "logs", dump_dir=tmp_path / "dumps", quiet=True)
        with compare_with_reference(model, reporting=reporting) as cmp:
            model(x).sum().backward()
            cmp.step()
    first = cmp.first_failure
    # the first addmm the model runs is the attention's input projection
    assert first["op"] == "aten::addmm.default" and first["module"] == "attn.self_attn" and first["phase"] == "forward"
    assert {"attn.linear1", "attn.linear2", "head"} <= set(cmp.stats["aten::addmm.default"].modules)
    assert [s.op for s in cmp.failed_ops] == ["aten::addmm.default"]
    assert cmp.summary()[0].op == "aten::addmm.default"
    log = (tmp_path / "logs" / "compare_rank0.log").read_text()
    assert "aten::addmm.default output 0 in attn.self_attn (forward, step 0" in log and "| aten::addmm.default |" in log
    dumped = torch.load(first["dump"], weights_only=True)  # a safe format: no arbitrary pickles
    assert dumped["op"] == "aten::addmm.default" and isinstance(dumped["args"][0], torch.Tensor)
    assert not replay(first["dump"]).passed
    assert replay(first["dump"], op=lambda *a, **k: torch.ops.aten.addmm.default(*a, **k) + 1e-2).passed

    model, x = model_and_input()
    with compare_with_reference(model, reporting=QUIET) as clean:
        model(x).sum().backward()
    assert clean.failed_ops == [] and clean.first_failure is None
    assert sum(s.compared for s in clean.stats.values()) > 50


def test_fail_fast_stops_at_the_first_failure():
    model, x = model_and_input()
    with pytest.raises(CompareFailure, match=r"aten::addmm.default output 0 in attn.self_attn"):
        with PerturbAddmm(), compare_with_reference(model, fail_fast=True, reporting=QUIET):
            model(x)


@pytest.mark.parametrize("how", ["bf16 weights", "bf16 autocast"])
def test_mixed_precision_has_no_false_failures(how):
    model, x = model_and_input()
    if how == "bf16 weights":
        model, x = model.to(torch.bfloat16), x.to(torch.bfloat16)
    with compare_with_reference(model, reference_dtype=torch.float32, reporting=QUIET) as cmp:
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=how == "bf16 autocast"):
            out = model(x)
        out.float().sum().backward()
    assert cmp.failed_ops == [], cmp.report()
    low = [s for s in cmp.stats.values() if "bfloat16" in s.dtypes]
    assert len(low) >= 10
    assert all(s.max_abs > 0 for s in low if s.op in ("aten::addmm.default", "aten::convolution.default")), \
        "bf16 results differ from the fp32 reference: the comparison really compared"


def test_reference_upcasts_only_floats_when_it_lacks_a_kernel():
    seen = []

    def half_less(x, index):
        seen.append((x.dtype, index.dtype))
        if x.dtype == torch.float16:
            raise RuntimeError("\"index_cpu\" not implemented for 'Half'")
        return x[index]

    out, upcast = run_on_reference(half_less, (torch.ones(4, dtype=torch.float16), torch.tensor([0, 2])), {}, "cpu")
    assert upcast and out.dtype == torch.float32
    assert seen == [(torch.float16, torch.int64), (torch.float32, torch.int64)]


def test_random_inplace_and_view_ops_are_skipped_by_default():
    torch.manual_seed(0)
    drop = nn.Dropout(0.5)
    x = torch.ones(8, 8)
    with compare_with_reference(drop, reporting=QUIET) as cmp:
        y = drop(x).view(64)
        y.add_(1)
    assert cmp.failed_ops == []
    # dropout on the CPU: bernoulli_ (random, in place), then a deterministic mul that is compared
    assert {"aten::bernoulli_.float", "aten::view.default", "aten::add_.Tensor"} <= set(cmp.skipped)
    assert "aten::mul.Tensor" in cmp.stats


def test_steps_ranks_and_enabled(monkeypatch):
    model, x = model_and_input()
    with compare_with_reference(model, start_step=1, end_step=1, reporting=QUIET) as cmp:
        for _ in range(3):
            model(x)
            cmp.step()
    per_step = sum(s.compared for s in cmp.stats.values())
    with compare_with_reference(model, reporting=QUIET) as one:
        model(x)
    assert per_step == sum(s.compared for s in one.stats.values()), "only step 1 was compared"
    monkeypatch.setenv("RANK", "1")
    with compare_with_reference(model, ranks=[0], reporting=QUIET) as other_rank:
        model(x)
    with compare_with_reference(model, enabled=False, reporting=QUIET) as off:
        model(x)
    assert other_rank.stats == {} and off.stats == {} and other_rank.rank == 1


class Tiny(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc, self.drop = nn.Linear(8, 8), nn.Dropout(0.5)

    def forward(self, x):
        return self.drop(torch.relu(self.fc(x))).add_(1)


def _run_tiny(make):
    torch.manual_seed(0)
    model, x = Tiny(), torch.randn(4, 8)
    with PerturbAddmm(), make(model) as cmp:
        model(x).sum().backward()
    return cmp


def test_option_groups_and_the_old_keywords_compare_alike(tmp_path):
    """The keywords before the groups still work, each mapped onto its group with one DeprecationWarning that
    names the new spelling; both spellings compare, skip, log and dump alike."""
    old = dict(atol=1e-3, rtol=0.0, skip_ops=["aten::relu"], compare_random=True, compare_inplace=True,
               log_dir=tmp_path / "old" / "logs", dump_dir=tmp_path / "old" / "dumps", max_failures_logged=1,
               quiet=True)
    with pytest.warns(DeprecationWarning) as caught:
        old_cmp = _run_tiny(lambda m: compare_with_reference(m, **old))
    assert len(caught) == 1 and caught[0].filename == __file__, "one warning, on the caller's line"
    message = str(caught[0].message)
    assert "atol=, rtol=, skip_ops=, compare_random=, compare_inplace=, log_dir=, dump_dir=, max_failures_logged=, " \
           "quiet= are deprecated" in message
    assert "tolerance=Tolerance(atol=0.001, rtol=0.0)" in message
    assert "selection=OpSelection(skip=['aten::relu'], include_random=True, include_inplace=True)" in message
    assert "reporting=Reporting(log_dir=" in message and "max_failures_logged=1, quiet=True)" in message
    new = dict(tolerance=Tolerance(atol=1e-3, rtol=0.0),
               selection=OpSelection(skip=["aten::relu"], include_random=True, include_inplace=True),
               reporting=Reporting(log_dir=tmp_path / "new" / "logs", dump_dir=tmp_path / "new" / "dumps",
                                   max_failures_logged=1, quiet=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        new_cmp = _run_tiny(lambda m: compare_with_reference(m, **new))
    assert old_cmp.tolerance == new_cmp.tolerance and old_cmp.selection == new_cmp.selection
    assert old_cmp.report() == new_cmp.report() and old_cmp.skipped == new_cmp.skipped
    assert "aten::bernoulli_.float" in new_cmp.stats and "aten::add_.Tensor" in new_cmp.stats   # included
    assert "aten::relu.default" in new_cmp.skipped
    assert len(old_cmp.failures) == len(new_cmp.failures) == 1 and len(new_cmp.first_failure) > 1
    for side in ("old", "new"):
        assert (tmp_path / side / "logs" / "compare_rank0.log").is_file()
        assert len(list((tmp_path / side / "dumps").iterdir())) == new_cmp.stats["aten::addmm.default"].failed

    # a group given and an old keyword: the keyword replaces that field only
    with pytest.warns(DeprecationWarning, match=r"quiet= is deprecated; write reporting=Reporting\(quiet=True\)"):
        both = CompareWithReference(reporting=Reporting(max_failures_logged=3), quiet=True)
    assert both.reporting == Reporting(max_failures_logged=3, quiet=True)
    assert OpSelection(only="addmm").only == ("addmm",) and OpSelection(skip=iter(["a", "b"])).skip == ("a", "b")


def test_unknown_keywords_and_wrong_groups_are_type_errors():
    with pytest.raises(TypeError, match="unexpected keyword argument 'atoll'"):
        compare_with_reference(atoll=1e-3)
    with pytest.raises(TypeError, match=r"tolerance= takes a torchport.debug.Tolerance, not float"):
        compare_with_reference(tolerance=1e-3)
    with pytest.raises(TypeError):
        Tolerance(1e-3, 1e-3, 1e-3)


# ---------------------------------------------------------------- NaN/Inf
class SqrtOfRelu(nn.Module):
    def forward(self, x):
        return torch.sqrt(torch.relu(x))  # finite forward; the backward divides by sqrt(0)


def test_nan_in_backward_only_is_traced_to_its_layer():
    torch.manual_seed(0)
    model = nn.Sequential()
    model.add_module("enc", nn.Sequential(nn.Linear(4, 8), nn.Tanh()))
    model.add_module("act", SqrtOfRelu())
    model.add_module("head", nn.Linear(8, 1))
    with NanInfTracker(model, check_every=64) as tracker:
        loss = model(torch.randn(16, 4)).sum()
        forward_first = tracker.first
        loss.backward()
        tracker.step()
    assert torch.isfinite(loss) and forward_first is None
    assert tracker.first["module"] == "act" and tracker.first["phase"] == "backward"
    assert tracker.first["op"] == "aten::div.Tensor"
    assert tracker.checks <= 2, "flags are read in batches, not once per tensor"
    del model.act  # without the sqrt nothing goes wrong
    with NanInfTracker(model) as clean:
        model(torch.randn(16, 4)).sum().backward()
    assert clean.first is None and clean.nonfinite_outputs == 0


# ---------------------------------------------------------------- two runs
class Chain(nn.Module):
    def __init__(self, extra=False, bug=False):
        super().__init__()
        self.a, self.b, self.c = nn.Linear(4, 8), nn.Linear(8, 8), nn.Linear(8, 2)
        self.extra, self.bug = extra, bug

    def forward(self, x):
        h = torch.tanh(self.a(x))
        if self.extra:
            h = h * 1.0          # one more op in this run: the sequences no longer line up by index
        h = self.b(h)
        if self.bug:
            h = h + 0.5          # the divergence
        return self.c(torch.relu(h))


def dump_run(folder, tensors=True, **kw):
    torch.manual_seed(0)
    model = Chain(**kw)
    with dump(folder, model, tensors=tensors) as d:
        model(torch.randn(4, 4)).sum().backward()
        d.step()


@pytest.mark.parametrize("tensors", [True, False])
def test_two_runs_align_despite_an_extra_op_and_find_the_divergence(tmp_path, tensors):
    dump_run(tmp_path / "a", tensors)
    dump_run(tmp_path / "same", tensors, extra=True)
    dump_run(tmp_path / "b", tensors, extra=True, bug=True)
    same = compare_runs(tmp_path / "a", tmp_path / "same")
    assert same.failed == [] and same.only_b == 2 and same.only_a == 0  # the extra mul, forward and backward
    diff = compare_runs(tmp_path / "a", tmp_path / "b")
    first = diff.first_divergence
    # b's output is shifted by the bug's add (only in B), so the first aligned op to differ is the relu after it
    assert first is not None and first.a["module"] == "(root)" and first.a["op"] == "aten::relu.default"
    assert first.a["phase"] == "forward"
    assert first.source == ("tensors" if tensors else "statistics")
    assert diff.only_b == 3  # the extra mul (forward and backward) and the bug's add
    before = diff.pairs[:diff.pairs.index(first)]
    assert all(p.passed for p in before if p.metrics is not None), "nothing diverges before the first divergence"
    out = write_comparison(diff, tmp_path / "report", "a", "b")
    md = (out / "compare.md").read_text()
    assert "first divergence: `(root)/aten::relu.default/forward/0/0`" in md
    assert (out / "compare.csv").read_text().splitlines()[0].startswith("A name,B name,dtype,shape,Cosine")


@pytest.mark.subprocess
def test_compare_cli(tmp_path):
    dump_run(tmp_path / "a")
    dump_run(tmp_path / "b", bug=True)
    p = subprocess.run([sys.executable, "-m", "torchport", "compare", str(tmp_path / "a"), str(tmp_path / "b"),
                        "-o", str(tmp_path / "r")], capture_output=True, text=True, env=ENV)
    assert p.returncode == 1 and "first divergence: (root)/aten::relu.default/forward/0/0" in p.stdout
    p = subprocess.run([sys.executable, "-m", "torchport", "compare", str(tmp_path / "a"), str(tmp_path / "a")],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 0 and "no divergence" in p.stdout
    p = subprocess.run([sys.executable, "-m", "torchport", "compare", str(tmp_path / "a"), str(tmp_path / "nope")],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 2 and "no dump for rank 0" in p.stderr


# ---------------------------------------------------------------- recording
def test_recorder_names_modules_by_path_and_feeds_ops_check(tmp_path):
    model, x = model_and_input()
    with record_ops(max_signatures=2) as rec:  # no model given: named automatically
        model(x).sum().backward()
        rec.step()
    data = rec.to_dict()
    ops = {o["op"]: o for o in data["ops"]}
    conv = ops["aten::convolution.default"]
    assert set(conv["modules"]) == {"stem", "backbone.0.conv1", "backbone.0.conv2"} and conv["backward"] == 0
    back = ops["aten::convolution_backward.default"]
    assert back["forward"] == 0 and set(back["modules"]) == {"stem", "backbone.0.conv1", "backbone.0.conv2"}
    assert "head" in ops["aten::addmm.default"]["modules"]
    assert all(len(o["inputs"]) <= 2 for o in data["ops"])
    assert not any(o["op"].startswith("profiler::") for o in data["ops"])
    path = rec.write(tmp_path / "ops.json")
    rows = load_ops_file(path)
    _, statuses = check(rows, load_target("cpu"))
    by_name = {st.op: st.status for st, _, _ in statuses}
    assert by_name["addmm"] == "supported" and by_name["native_batch_norm"] == "supported"
    assert by_name["convolution_backward"] == "composite"  # CompositeExplicit in torch 2.13
    assert all(status != "missing" for status in by_name.values())


def test_a_composite_takes_the_verdict_of_the_kernels_it_calls(tmp_path):
    """issue 32 item 9: ops check called logcumsumexp "composite, no kernel needed" on musa, whose list lacks the
    _logcumsumexp its kernel calls.  The recording notes what each composite's kernel calls (`via`); the composite
    takes the worst verdict of those, and an op called only inside an op the target runs whole is left out."""
    from torchport.kb.operators import load_via

    with record_ops() as rec:
        x = torch.randn(4, 5)
        torch.logcumsumexp(x, 1)
        torch.mm(x, x.T)
    path = rec.write(tmp_path / "ops.json")
    via = load_via(path)
    assert via["aten::_logcumsumexp.default"] == {"aten::logcumsumexp.default": 1}
    rows = {st.op: st for st, _, _ in check(load_ops_file(path), load_target("musa"), "2.7.1", via=via)[1]}
    assert rows["logcumsumexp"].status == "missing" and "_logcumsumexp (missing)" in rows["logcumsumexp"].detail
    assert "mm.out" not in rows, "mm has a musa kernel: what the CPU's mm called inside is no op musa needs"
    before = {st.op: st.status for st, _, _ in check(load_ops_file(path), load_target("musa"), "2.7.1")[1]}
    assert before["logcumsumexp"] == "composite", "without the recorded calls: the old verdict"


def test_ops_check_says_how_many_recorded_ops_it_left_out_as_inside_others(tmp_path, capsys):
    """A new user's trial (torchkge 0.17.7): one ops file said "62 ops" on npu and "69 ops" on musa, without saying
    that the rest ran only inside ops the target runs whole."""
    from torchport.cli import main

    with record_ops() as rec:
        x = torch.randn(4, 5)
        torch.logcumsumexp(x, 1)
        torch.mm(x, x.T)
    path = rec.write(tmp_path / "ops.json")
    recorded = len(load_ops_file(path))
    main(["ops", "check", str(path), "--to", "musa"])
    first = capsys.readouterr().out.splitlines()[0]
    assert f"checked of {recorded} recorded" in first and "run only inside ops musa runs whole" in first, first


@pytest.mark.subprocess
def test_ops_record_cli_stops_after_n_steps(tmp_path):
    script = tmp_path / "train.py"
    script.write_text("import torch\nm = torch.nn.Linear(4, 1).cuda()\nopt = torch.optim.SGD(m.parameters(), 0.1)\n"
                      "for step in range(50):\n    loss = m(torch.randn(8, 4, device='cuda')).pow(2).mean()\n"
                      "    opt.zero_grad(); loss.backward(); opt.step()\n    print('step', step)\n")
    out = tmp_path / "ops.json"
    p = subprocess.run([sys.executable, "-m", "torchport", "ops", "record", "-o", str(out), "--steps", "3", "--to",
                        "cpu", "--", "python", str(script)], capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["step", "0", "step", "1"], "the script ends after the 3rd optimizer step"
    data = json.loads(out.read_text())
    assert data["steps"] == 3 and {o["op"] for o in data["ops"]} >= {"aten::addmm.default", "aten::mm.default"}
    p = subprocess.run([sys.executable, "-m", "torchport", "ops", "check", str(out), "--to", "npu"],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 0 and "ops check --to npu" in p.stdout
