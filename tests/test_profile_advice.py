"""torchport profile's copy/format share and its table of ops whose input shapes vary across steps:
real profiles on the CPU (torch.profiler), and the rules on recorded events."""
import json
import subprocess
import sys

import pytest
from conftest import ROOT

torch = pytest.importorskip("torch")

from torchport.profile import Profiler, advice  # noqa: E402
from torchport.profile.advice import Event  # noqa: E402

pytestmark = pytest.mark.torch

ENV = {"PYTHONPATH": str(ROOT / "src"), "PYTHONWARNINGS": "ignore"}
VARYING = """
import sys, torch
model = torch.nn.Linear(16, 8)
opt = torch.optim.SGD(model.parameters(), 0.1)
for batch in [4, 6, 8] * 3 if "--fixed" not in sys.argv else [4] * 9:
    loss = model(torch.randn(batch, 16)).sum()
    opt.zero_grad(); loss.backward(); opt.step()
"""


def run_profile(tmp_path, *args):
    import os

    (tmp_path / "train.py").write_text(VARYING)
    out = tmp_path / "prof"
    p = subprocess.run([sys.executable, "-m", "torchport", "profile", "--steps", "3", "-o", str(out), "--",
                        "python", str(tmp_path / "train.py"), *args], capture_output=True, text=True,
                       env=dict(os.environ, **ENV), timeout=300)
    assert p.returncode == 0, p.stderr
    return p, json.loads((out / "profile.json").read_text()), (out / "summary.md").read_text()


@pytest.mark.subprocess
def test_batch_sizes_that_change_each_step_are_listed(tmp_path):
    p, data, summary = run_profile(tmp_path)
    v = data["varying_shapes"]
    assert v["steps_compared"] == 3 and v["note"] is None
    rows = {r["op"]: r for r in v["ops"]}
    # wait 1 + warmup 1: the profiled steps ran batches 8, 4, 6, one Linear each
    assert rows["aten::addmm"]["signatures"] == 3 and rows["aten::addmm"]["steps"] == [1, 2, 3]
    assert rows["aten::linear"]["signatures"] == 3
    assert {s.split("], [")[1] for s in rows["aten::addmm"]["examples"]} == {"8, 16", "4, 16", "6, 16"}
    assert not any(r["op"].endswith("Backward0") for r in v["ops"]), "autograd nodes are not ops"
    assert "| aten::addmm | 3 | [[8], [8, 16], [16, 8], [], []]; " in summary
    assert "## Ops whose input shapes vary across steps" in summary
    assert f"input shapes vary across steps: {len(v['ops']) + v['more']} ops (" in p.stderr
    assert "copy/format: " in p.stderr and "- copy/format: " in summary


@pytest.mark.subprocess
def test_fixed_shapes_vary_in_no_op(tmp_path):
    p, data, summary = run_profile(tmp_path, "--fixed")
    assert data["varying_shapes"]["ops"] == [] and data["varying_shapes"]["note"] is None
    assert "input shapes across steps: none vary (3 steps compared)" in p.stderr
    assert "None: every op called in two or more of the 3 whole steps" in summary


def profile_copies(tmp_path, copies: int) -> dict:
    """Elementwise work, with or without `copies` permute().contiguous() a step; one thread, so that
    another process on the machine slows both kinds of op alike."""
    x = torch.randn(64, 64, 64)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        with Profiler(tmp_path / f"p{copies}", wait=0, warmup=1, active=3) as prof:
            for _ in range(4):
                y = torch.tanh(x) * 2 + 1
                for _ in range(copies):
                    y = y.permute(0, 2, 1).contiguous()
                y.sum().item()
                prof.step()
    finally:
        torch.set_num_threads(threads)
    return prof.result["copy_format"]


def test_contiguous_on_permuted_tensors_is_a_high_copy_share(tmp_path):
    """Measured on torch 2.13 CPU (2 shared cores, load 5): 60-79% with 10 permute().contiguous() a
    step, 0% without (no copy op at all)."""
    heavy, plain = profile_copies(tmp_path, 10), profile_copies(tmp_path, 0)
    assert heavy["basis"] == "host self time" and heavy["note"] is None
    assert heavy["share"] > 0.3 and heavy["ops"][0]["op"] == "aten::contiguous", heavy
    assert heavy["copy_us"] == pytest.approx(sum(o["us"] for o in heavy["ops"]), abs=0.01)
    assert plain["share"] < 0.05 and plain["op_us"] > 0, plain
    summary = (tmp_path / "p10" / "summary.md").read_text()
    assert f"- copy/format: {heavy['share']:.1%} of op time (aten::contiguous " in summary


# ------------------------------------------------------------------ the rules, on recorded events
def ev(name, start, self_us, total_us=None, parent=None, shapes=None, **kw):
    return Event(name, start, self_us, self_us if total_us is None else total_us, shapes, parent, **kw)


def test_copy_ops_count_where_the_script_calls_them():
    events = [
        ev("aten::addmm", 0, 50, 60),                     # 0
        ev("aten::copy_", 1, 10, parent=0),               # 1: addmm's bias copy: not counted
        ev("## forward ##", 100, 1, 41),                  # 2: a record_function range
        ev("aten::contiguous", 101, 2, 40, parent=2),     # 3: counted with what it calls
        ev("aten::clone", 102, 8, 38, parent=3),          # 4
        ev("aten::copy_", 103, 30, parent=4),             # 5
        ev("aten::reshape", 200, 2, 22),                  # 6
        ev("aten::clone", 201, 5, 20, parent=6),          # 7: a layout copy
        ev("aten::copy_", 202, 15, parent=7),             # 8
        ev("aten::clone", 300, 3, 9),                     # 9: the script's own clone: not counted
        ev("aten::copy_", 301, 6, parent=9),              # 10
        ev("aten::to", 400, 1, 5),                        # 11
        ev("aten::_to_copy", 401, 1, 4, parent=11),       # 12
        ev("aten::copy_", 402, 3, parent=12),             # 13
    ]
    c = advice.copy_format(events, device=False)
    total = sum(e.self_us for e in events)
    assert c["op_us"] == total and c["basis"] == "host self time"
    assert {o["op"]: o["us"] for o in c["ops"]} == {"aten::contiguous": 40, "aten::clone": 20, "aten::to": 5}
    assert c["share"] == round(65 / total, 4)
    assert advice.copy_line(c).startswith(f"copy/format: {65 / total:.1%} of op time (aten::contiguous ")


def test_device_copies_count_device_time_once():
    events = [
        ev("aten::copy_", 0, 5, device_self_us=40, device_total_us=40, kernels=(("Memcpy HtoD (Pageable -> Device)", 40),)),
        ev("aten::item", 10, 2, 4, device_total_us=6),
        ev("aten::_local_scalar_dense", 11, 2, parent=1, device_self_us=6, device_total_us=6,
           kernels=(("Memcpy DtoH (Device -> Pageable)", 6),)),
        ev("aten::mm", 20, 3, device_self_us=54, device_total_us=54, kernels=(("sm90_gemm", 54),)),
    ]
    c = advice.copy_format(events, device=True)
    assert c["basis"] == "device time of the ops' kernels" and c["op_us"] == 100
    assert {o["op"]: o["us"] for o in c["ops"]} == {"aten::copy_": 40, "Memcpy DtoH (Device -> Pageable)": 6}
    assert c["share"] == 0.46
    # a device profile whose ops ran no kernel: host time instead
    assert advice.copy_format([ev("aten::copy_", 0, 5), ev("aten::mm", 9, 15)], device=True)["share"] == 0.25


def test_no_op_time_is_said_not_zero():
    c = advice.copy_format([], device=False)
    assert c["share"] is None and advice.copy_line(c) == "copy/format: no op time was recorded"


STEPS = [(0, 100), (100, 200), (200, 300)]


def test_varying_shapes_rules():
    events = [
        # each step calls mm with two shapes, the same two: not varying
        *(ev("aten::mm", a + d, 1, shapes=s) for a, _ in STEPS for d, s in ((1, "[[2, 3]]"), (2, "[[3, 4]]"))),
        # addmm: batch 4, 4, 6
        ev("aten::addmm", 5, 9, shapes="[[4, 16]]"), ev("aten::addmm", 105, 9, shapes="[[4, 16]]"),
        ev("aten::addmm", 205, 9, shapes="[[6, 16]]"),
        ev("aten::cat", 10, 1, shapes="[[1]]"),                        # one step only: not listed
        ev("AddmmBackward0", 20, 1, shapes="[[1]]"), ev("AddmmBackward0", 120, 1, shapes="[[2]]"),
        ev("aten::relu", 400, 1, shapes="[[9]]"), ev("aten::relu", 50, 1, shapes="[[8]]"),  # 400: no step
    ]
    v = advice.varying_shapes(events, STEPS)
    assert v["steps_compared"] == 3 and v["more"] == 0 and v["note"] is None
    assert v["ops"] == [{"op": "aten::addmm", "signatures": 2, "examples": ["[[4, 16]]", "[[6, 16]]"],
                         "steps": [1, 2, 3], "host_self_us": 27}]
    # the partial last step is left out: it may lack calls
    assert advice.varying_shapes(events, STEPS, partial=True)["ops"] == []
    assert "none vary (2 steps compared)" in advice.shapes_line(advice.varying_shapes(events, STEPS, partial=True))
    v = advice.varying_shapes(events, STEPS[:1])
    assert v["ops"] == [] and "needs at least 2 whole profiled steps" in advice.shapes_line(v)
    assert advice.varying_shapes(events, STEPS, recorded=False)["note"] == "input shapes were not recorded"


def test_varying_shapes_table_is_capped():
    events = [ev(f"aten::op{i}", a + 1, i, shapes=f"[[{a}]]") for i in range(20) for a, _ in STEPS]
    v = advice.varying_shapes(events, STEPS, limit=5)
    assert len(v["ops"]) == 5 and v["more"] == 15
    assert [r["op"] for r in v["ops"]] == ["aten::op19", "aten::op18", "aten::op17", "aten::op16", "aten::op15"]
    assert "20 ops" in advice.shapes_line(v)


def test_the_nesting_copy_ops_toml_relies_on(tmp_path):
    """kb/copy_ops.toml's first source: what torch records for each kind of copy, counted as the data says."""
    x = torch.randn(64, 32)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU], record_shapes=True) as prof:
        x.t().reshape(-1)                   # a layout copy: aten::reshape > aten::clone > aten::copy_
        x.clone()                           # asked for: not counted
        x.to(torch.float64)                 # aten::to > aten::_to_copy > aten::copy_
        x.t().contiguous()                  # aten::contiguous > aten::clone > aten::copy_
        torch.nn.functional.linear(x, torch.randn(8, 32), torch.randn(8))   # addmm's own copy_: not counted
    events, _ = advice.records(prof)
    chains = set()
    for e in events:
        chain, p = [e.name], e.parent
        while p is not None:
            chain.append(events[p].name)
            p = events[p].parent
        chains.add(" > ".join(reversed(chain)))
    assert {"aten::reshape > aten::clone > aten::copy_", "aten::to > aten::_to_copy > aten::copy_",
            "aten::contiguous > aten::clone > aten::copy_", "aten::linear > aten::addmm > aten::copy_",
            "aten::clone > aten::copy_"} <= chains, chains
    c = advice.copy_format(events, device=False)
    assert {o["op"] for o in c["ops"]} == {"aten::clone", "aten::to", "aten::contiguous"}
    reshape_clone = next(e for e in events if e.name == "aten::clone" and e.parent is not None
                         and events[e.parent].name == "aten::reshape")
    assert {o["op"]: o["us"] for o in c["ops"]}["aten::clone"] == pytest.approx(reshape_clone.total_us, abs=0.01)
