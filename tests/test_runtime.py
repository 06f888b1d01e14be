"""`torchport run` / `import torchport.auto`: unmodified CUDA scripts on the cpu target, each in a
fresh interpreter (the patches are process-wide)."""
import json
import os
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import ROOT, run_program

FIXTURES = ROOT / "tests" / "fixtures" / "runtime"
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
ENV.pop("TORCHPORT_TARGET", None)


def torchport_run(*args, cwd=None, timeout=300, env=None):
    p = run_program([sys.executable, "-m", "torchport", "run", *args], capture_output=True, text=True,
                    cwd=cwd, env=env or ENV, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def python(code_or_path, *args, cwd=None, env=None, timeout=300):
    """Run a script (a Path) or code (a str) in a fresh interpreter."""
    cmd = [sys.executable, str(code_or_path), *args] if isinstance(code_or_path, Path) \
        else [sys.executable, "-c", textwrap.dedent(code_or_path), *args]
    p = run_program(cmd, capture_output=True, text=True, cwd=cwd, env=env or ENV, timeout=timeout)
    return p.returncode, p.stdout, p.stderr


def script(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(textwrap.dedent(body))
    return path


# ---------------------------------------------------------------- the acceptance scripts
@pytest.mark.subprocess
@pytest.mark.torch
def test_training_script_runs_unmodified_on_cpu(tmp_path):
    report = tmp_path / "report.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(FIXTURES / "train_cuda.py"),
                                   "--ckpt", str(tmp_path / "ck.pt"), "--steps", "3")
    assert code == 0, err
    steps = [line for line in out.splitlines() if line.startswith("step")]
    # CUDA's float16 autocast runs as the cpu target's AMP dtype (bfloat16), said once
    assert len(steps) == 3 and all("autocast torch.bfloat16 device cpu" in s for s in steps)
    assert "reloaded 4 tensors; float64 stays torch.float64; scripted ScriptFunction 6.0" in out
    data = json.loads(report.read_text())
    assert data["processes"] == 1 and data["failed"] == {}
    assert [n for n in data["notes"] if "CUDA autocast float16 runs as bfloat16 on CPU" in n] != []
    for api, n in {"torch.Tensor.cuda": 3, "torch.cuda.amp.autocast": 3, "torch.cuda.synchronize": 3,
                   "torch.cuda.manual_seed_all": 1, "torch.nn.Module.cuda": 1, "torch.cuda.amp.GradScaler": 1,
                   "torch.load(map_location=)": 1}.items():
        assert data["redirected"][api] == n, api
    code, out, err = python(FIXTURES / "train_cuda.py", "--ckpt", str(tmp_path / "x.pt"))
    assert code != 0 and "needs a GPU" in err, "unpatched, the script must fail here (or this test proves nothing)"


@pytest.mark.distributed
@pytest.mark.subprocess
@pytest.mark.torch
def test_ddp_nccl_script_trains_like_the_hand_written_cpu_version(tmp_path):
    report = tmp_path / "ddp.md"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), "-m", "torch.distributed.run",
                                   "--standalone", "--nproc_per_node", "2", str(FIXTURES / "ddp_nccl.py"))
    assert code == 0, err
    ours = [line for line in out.splitlines() if line.startswith("step")]
    code, out, err = python("import runpy, sys; sys.argv = ['torchrun', '--standalone', '--nproc_per_node', '2', "
                            f"{str(FIXTURES / 'ddp_cpu.py')!r}]; runpy.run_module('torch.distributed.run', "
                            "run_name='__main__')")
    assert code == 0, err
    reference = [line for line in out.splitlines() if line.startswith("step")]
    assert len(ours) == 5 and ours == reference
    md = report.read_text()
    assert "processes: 3" in md  # torchrun's process and its two workers, merged
    assert "| `torch.distributed.init_process_group(backend)` | 2 |" in md
    assert "| `torch.nn.parallel.DistributedDataParallel(device_ids)` | 2 |" in md


@pytest.mark.distributed
@pytest.mark.subprocess
@pytest.mark.torch
def test_sync_batchnorm_under_gloo_runs_as_batchnorm_per_process(tmp_path):
    """Two gloo processes on cpu: SyncBatchNorm would raise "expected input tensor to be on GPU";
    under run it normalises with each process's own statistics, as BatchNorm does."""
    path = script(tmp_path, "sbn.py", """
        import os, torch, torch.distributed as dist
        dist.init_process_group("nccl")
        rank = dist.get_rank()
        torch.cuda.set_device(int(os.environ["LOCAL_RANK"]))
        torch.manual_seed(0)
        bn = torch.nn.Sequential(torch.nn.BatchNorm2d(3))
        ref = torch.nn.BatchNorm2d(3)
        ref.load_state_dict(bn[0].state_dict())
        sbn = torch.nn.SyncBatchNorm.convert_sync_batchnorm(bn).cuda()
        x = torch.randn(4, 3, 5, 5, generator=torch.Generator().manual_seed(rank))
        out = sbn(x.cuda())
        with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), f"rank{rank}.txt"), "w") as f:
            f.write(f"rank {rank} {type(sbn[0]).__name__} {torch.equal(out.cpu(), ref(x))}")
        dist.destroy_process_group()
    """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), "-m", "torch.distributed.run",
                                   "--standalone", "--nproc_per_node", "2", str(path))
    assert code == 0, err
    # each process writes its own file: on a shared stdout their writes interleave, even inside a line
    assert [(tmp_path / f"rank{r}.txt").read_text() for r in (0, 1)] == [
        "rank 0 SyncBatchNorm True", "rank 1 SyncBatchNorm True"], out
    assert json.loads(report.read_text())["standin"]["torch.nn.SyncBatchNorm"] == 2
    code, out, err = python("import runpy, sys; sys.argv = ['torchrun', '--standalone', '--nproc_per_node', '2', "
                            f"{str(path)!r}]; runpy.run_module('torch.distributed.run', run_name='__main__')")
    assert code != 0, "unpatched, the script must fail here (or this test proves nothing)"


@pytest.mark.subprocess
@pytest.mark.torch
def test_cuda_tagged_checkpoint_with_a_partial_map_location_dict(tmp_path):
    """A checkpoint whose storages say cuda:0 and cuda:1 (written here by tagging CPU storages), loaded
    with a dict that names only cuda:1: the cuda:0 storages must land on the target too."""
    path = script(tmp_path, "ck.py", """
        import sys, torch
        ckpt = sys.argv[1]
        if sys.argv[2] == "write":
            tags = iter(["cuda:0", "cuda:1"] * 4)
            torch.serialization.register_package(0, lambda obj: next(tags), lambda obj, loc: None)
            torch.save({"a": torch.ones(2), "b": torch.zeros(3)}, ckpt)
        else:
            sd = torch.load(ckpt, map_location={"cuda:1": "cuda:0"}, weights_only=True)
            print(sorted((k, v.device.type, v.sum().item()) for k, v in sd.items()))
    """)
    ckpt = tmp_path / "c.pt"
    code, out, err = python(path, str(ckpt), "write")
    assert code == 0, err
    code, out, err = python(path, str(ckpt), "read")
    assert code != 0 and "CUDA" in err, "unpatched, torch cannot restore CUDA storages here (the fixture is real)"
    code, out, err = torchport_run("--to", "cpu", str(path), str(ckpt), "read")
    assert code == 0, err
    assert out.strip() == "[('a', 'cpu', 2.0), ('b', 'cpu', 0.0)]"


@pytest.mark.subprocess
@pytest.mark.torch
def test_accelerator_target_on_a_host_without_one_runs_as_cpu(tmp_path):
    path = script(tmp_path, "acc.py", """
        import torch
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        y = torch.randn(64, 64, device="cuda") @ torch.randn(64, 64).cuda()
        end.record()
        torch.cuda.synchronize()
        print(y.device.type, torch.cuda.max_memory_allocated(), end.elapsed_time(start) <= 0 < start.elapsed_time(end))
        print(torch.device(f"cuda:{torch.cuda.current_device()}"))
    """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "accelerator", "--report", str(report), str(path))
    assert code == 0, err
    assert out.split("\n")[:2] == ["cpu 0 True", "cpu"]
    data = json.loads(report.read_text())
    assert data["target"] == "cpu" and "no accelerator on this machine: accelerator runs as the cpu target" in data["notes"]


# ---------------------------------------------------------------- failure modes
@pytest.mark.subprocess
@pytest.mark.torch
def test_integer_device_ids_and_device_map_dicts(tmp_path):
    path = script(tmp_path, "ids.py", """
        import torch, torch.nn as nn
        import torch.serialization as ser
        x = torch.ones(2).to(0)
        m = nn.Linear(2, 2).to(0)
        print(x.device, next(m.parameters()).device, torch.zeros(2, device=1).device, torch.device(0),
              torch.device("cuda", 1), torch.ones(1).cuda(1).device, torch.ones(1).new_zeros(2, device=0).device)
        model = nn.Sequential(nn.Linear(2, 2), nn.ReLU(), nn.Linear(2, 2))
        device_map = {"0": 0, "1": "cuda:0", "2": torch.device("cuda", 1)}
        for name, dev in device_map.items():
            model.get_submodule(name).to(dev)
        print(sorted({p.device.type for p in model.parameters()}))
        real_tag = ser.location_tag
        ser.location_tag = lambda storage: "cuda:0"  # fault injection: a checkpoint written on a GPU
        torch.save({"w": torch.arange(3.0)}, "gpu.pt")
        ser.location_tag = real_tag
        for where in (None, "cuda:0", 0, {"cuda:0": "cuda:1"}, torch.device("cuda")):
            print(where, torch.load("gpu.pt", map_location=where)["w"].tolist())
    """)
    code, out, err = torchport_run("--to", "cpu", str(path), cwd=tmp_path)
    assert code == 0, err
    lines = out.splitlines()
    assert lines[0] == "cpu cpu cpu cpu cpu cpu cpu"
    assert lines[1] == "['cpu']"
    # torch.device("cuda") is already the target device when it is built
    assert lines[2:] == [f"{w} [0.0, 1.0, 2.0]" for w in ("None", "cuda:0", "0", "{'cuda:0': 'cuda:1'}", "cpu")]
    code, out, err = python(path, cwd=tmp_path)
    assert code != 0, "without torchport these device ids fail on this machine"


@pytest.mark.subprocess
@pytest.mark.torch
def test_float64_is_never_downcast(tmp_path):
    path = script(tmp_path, "f64.py", """
        import torch
        a = torch.ones(2, dtype=torch.float64, device="cuda")
        b = torch.ones(2, dtype=torch.float64).cuda()
        c = torch.ones(2).to("cuda", torch.float64)
        d = torch.nn.Linear(2, 2).double().cuda().weight
        print(a.dtype, b.dtype, c.dtype, d.dtype, (a @ b).dtype)
    """)
    code, out, err = torchport_run("--to", "cpu", str(path))
    assert code == 0, err
    assert out.split() == ["torch.float64"] * 5


@pytest.mark.subprocess
@pytest.mark.torch
def test_is_available_policy_for_project_and_libraries(tmp_path):
    lib = tmp_path / "venvlike" / "lib" / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(textwrap.dedent("""
        import torch
        def probe():
            return torch.cuda.is_available(), torch.cuda.device_count(), torch.ones(1).is_cuda
        def sync():
            torch.cuda.synchronize()
            return "synced"
    """))
    path = script(tmp_path, "idiom.py", f"""
        import sys
        sys.path.insert(0, {str(lib.parent)!r})
        import torch, fakelib
        device = "cuda" if torch.cuda.is_available() else "cpu"
        x = torch.ones(2, device=device)
        print(device, x.device, torch.cuda.device_count(), x.is_cuda, fakelib.probe())
        try:
            print(fakelib.sync())
        except Exception as e:
            print("library sync:", type(e).__name__)
    """)
    results = {}
    for policy in ("project", "always", "real"):
        code, out, err = torchport_run("--to", "cpu", "--policy", policy, str(path))
        assert code == 0, err
        results[policy] = out.splitlines()
    assert results["project"][0] == "cuda cpu 1 True (False, 0, False)"
    assert results["project"][1].startswith("library sync:"), "a library gets the real torch.cuda"
    assert results["always"] == ["cuda cpu 1 True (True, 1, True)", "synced"]
    assert results["real"][0] == "cpu cpu 0 False (False, 0, False)"


@pytest.mark.subprocess
@pytest.mark.torch
def test_missing_apis_neutral_raise_or_warn_and_are_reported(tmp_path):
    path = script(tmp_path, "missing.py", """
        import warnings, torch
        torch.cuda.empty_cache()            # a no-op on cpu (target data)
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            for _ in range(3):
                try:
                    print("value", torch.cuda.memory_allocated() / 2**30)
                except Exception as e:
                    print(type(e).__name__, isinstance(e, AttributeError), e)
            try:
                print("graph", torch.cuda.CUDAGraph())
            except Exception as e:
                print(type(e).__name__, e)
            print("warnings", [str(x.message).split(':')[0] for x in w])
        print(hasattr(torch.cuda, "memory_allocated"), hasattr(torch.cuda, "CUDAGraph"),
              isinstance(torch.cuda.Stream(), torch.cuda.Stream))
    """)
    report = tmp_path / "r.json"
    # default: the observing call answers a neutral number, warned once and counted; the rest fail
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0, err
    assert out.count("value 0.0") == 3
    assert "TorchportMissing torch.cuda.CUDAGraph has no counterpart on CPU" in out
    assert "warnings ['torch.cuda.memory_allocated has no counterpart on CPU']" in out, "warned once"
    assert "True False True" in out, "hasattr is truthful: a name that would raise is absent"
    data = json.loads(report.read_text())
    assert data["standin"] == {"torch.cuda.memory_allocated": 3} and data["noop"] == {"torch.cuda.empty_cache": 1}
    assert data["failed"] == {"torch.cuda.CUDAGraph": 1}  # the call; the hasattr is a probe, not a failure
    assert data["probed"] == {"torch.cuda.CUDAGraph": 1}
    # raise: observing calls fail too
    code, out, err = torchport_run("--to", "cpu", "--on-missing", "raise", str(path))
    assert code == 0, err
    assert out.count("TorchportMissing True torch.cuda.memory_allocated has no counterpart on CPU: torchport "
                     "cannot redirect it") == 3
    assert "False False True" in out
    # warn: the rest are skipped, returning None
    code, out, err = torchport_run("--to", "cpu", "--on-missing", "warn", str(path))
    assert code == 0, err
    assert "value 0.0" in out and "graph None" in out
    assert "torch.cuda.CUDAGraph has no counterpart on CPU" in out


@pytest.mark.subprocess
@pytest.mark.torch
def test_undo_restores_everything_and_patches_apply_once(tmp_path):
    code, out, err = python("""
        import os, types, torch
        import torch.jit._builtins as jb
        before = dict(device=torch.device, ones=torch.ones, to=torch.Tensor.__dict__.get("to"),
                      load=torch.load, autocast=torch.autocast, cls=type(torch.cuda),
                      avail=torch.cuda.__dict__["is_available"], builtins=len(jb._get_builtin_table()),
                      env={k: os.environ.get(k) for k in ("PYTHONPATH", "TORCHPORT_TARGET")})
        os.environ["TORCHPORT_TARGET"] = "cpu"
        import torchport.auto
        import torchport.runtime as rt
        s = rt.active()
        n = len(s.patcher.log)
        import importlib; importlib.reload(torchport.auto)
        assert rt.patch() is s and rt.active() is s and len(s.patcher.log) == n, "patched once"
        assert torch.cuda.is_available() and torch.ones(1, device="cuda").device.type == "cpu"
        try:
            rt.patch("xpu")
        except Exception as e:
            print("second target:", type(e).__name__)
        del os.environ["TORCHPORT_TARGET"]
        torchport.auto.undo()
        after = dict(device=torch.device, ones=torch.ones, to=torch.Tensor.__dict__.get("to"),
                     load=torch.load, autocast=torch.autocast, cls=type(torch.cuda),
                     avail=torch.cuda.__dict__["is_available"], builtins=len(jb._get_builtin_table()),
                     env={k: os.environ.get(k) for k in ("PYTHONPATH", "TORCHPORT_TARGET")})
        print("restored", before == after, rt.active())
        print("cuda", torch.cuda.is_available(), "__torchport__" in vars(torch.cuda))
        try:
            torch.ones(1, device="cuda")
        except Exception as e:
            print("real cuda again:", type(e).__name__)
    """)
    assert code == 0, err
    assert "second target: UsageError" in out
    assert "restored True None" in out
    assert "cuda False False" in out
    assert "real cuda again:" in out


@pytest.mark.distributed
@pytest.mark.subprocess
@pytest.mark.torch
def test_threads_and_spawned_workers_are_patched(tmp_path):
    path = script(tmp_path, "spawned.py", """
        import threading, torch, torch.multiprocessing as mp

        def worker(rank, folder):
            x = torch.ones(2, device=f"cuda:{rank}") * (rank + 1)
            torch.cuda.synchronize()
            open(f"{folder}/{rank}.txt", "w").write(f"{x.device} {x.sum().item()}")

        if __name__ == "__main__":
            import sys
            seen = []
            t = threading.Thread(target=lambda: seen.append(torch.zeros(1, device="cuda").device.type))
            t.start(); t.join()
            print("thread", seen)
            mp.spawn(worker, args=(sys.argv[1],), nprocs=2)
    """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path), str(tmp_path))
    assert code == 0, err
    assert "thread ['cpu']" in out
    assert sorted((tmp_path / f"{r}.txt").read_text() for r in (0, 1)) == ["cpu 2.0", "cpu 4.0"]
    data = json.loads(report.read_text())
    assert data["processes"] == 3 and data["redirected"]["torch.cuda.synchronize"] == 2


# ---------------------------------------------------------------- CLI
@pytest.mark.subprocess
@pytest.mark.torch
def test_run_module_argv_and_exit_codes(tmp_path):
    (tmp_path / "mymod.py").write_text("import sys, torch\nprint(sys.argv[1:], torch.ones(1, device='cuda').device)\n"
                                       "sys.exit(int(sys.argv[-1]))\n")
    code, out, err = torchport_run("--to", "cpu", "-m", "mymod", "--to", "x", "-m", "3", cwd=tmp_path)
    assert code == 3 and "['--to', 'x', '-m', '3'] cpu" in out
    boom = script(tmp_path, "boom.py", "raise ValueError('from the script')\n")
    code, out, err = torchport_run("--to", "cpu", str(boom))
    assert code == 1 and "ValueError: from the script" in err and "Traceback" in err


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("args, message", [
    (["--to", "nope", "x.py"], "unknown target 'nope'"),
    (["--to", "cpu", "missing.py"], "script not found: missing.py"),
    (["--to", "cpu", "--policy", "sometimes", "x.py"], "invalid choice"),
    (["--to", "npu", "x.py"], "torch_npu is not installed"),
])
def test_run_usage_errors(tmp_path, args, message):
    (tmp_path / "x.py").write_text("print('ran')\n")
    code, out, err = torchport_run(*args, cwd=tmp_path)
    assert code == 2 and message in err and "ran" not in out
    assert "Traceback" not in err


def test_cuda_variables_map_before_the_vendor_stack():
    from torchport.backends import load_target
    from torchport.runtime import environment

    env = {"CUDA_VISIBLE_DEVICES": "2,3", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    changed = environment.map_cuda_variables(load_target("npu"), env)
    assert env["ASCEND_RT_VISIBLE_DEVICES"] == "2,3" and env["PYTORCH_NPU_ALLOC_CONF"] == "expandable_segments:True"
    environment.restore(changed, env)
    assert env == {"CUDA_VISIBLE_DEVICES": "2,3", "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True"}
    env = {"CUDA_VISIBLE_DEVICES": "1", "MUSA_VISIBLE_DEVICES": "0"}
    environment.map_cuda_variables(load_target("musa"), env)
    assert env["MUSA_VISIBLE_DEVICES"] == "0", "a target variable the user set wins"
    child = {"PYTHONPATH": "/x"}
    environment.for_children({"target": "npu", "policy": "project", "on_missing": "raise"}, child)
    assert child["TORCHPORT_TARGET"] == "npu" and child["PYTHONPATH"].split(os.pathsep) == [environment.BOOT, "/x"]


@pytest.mark.torch
def test_device_map_for_indexed_targets():
    import torch

    from torchport.runtime.devices import DeviceMap

    m = DeviceMap("npu", True, torch.device)
    assert m.map("cuda") == "npu" and m.map("cuda:3") == "npu:3" and m.map(2) == "npu:2"
    assert m.map({"a": "cuda:1", "b": "cpu"}) == {"a": "npu:1", "b": "cpu"}
    assert m.map(["cuda:0", 1]) == ["npu:0", "npu:1"]
    xpu = DeviceMap("xpu", True, torch.device)  # a device type torch knows without the hardware
    assert xpu.map(torch.device("cuda", 1)) == torch.device("xpu", 1)
    assert DeviceMap("cpu", False, torch.device).map("cuda:3") == "cpu"
    keep = {"b": "cpu"}
    assert m.map(keep) is keep and m.map("cpu") == "cpu" and m.map(True) is True
    assert m.map("cuda:x") == "cuda:x"


@pytest.mark.subprocess
@pytest.mark.torch
def test_a_program_on_path_runs_as_a_child_that_patches_itself(tmp_path):
    env = dict(ENV, PATH=os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")]))
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), Path(sys.executable).name, "-c",
                                   "import torch; print(torch.ones(1, device='cuda:0').device, "
                                   "torch.cuda.is_available())", env=env)
    assert code == 0, err
    assert out.split() == ["cpu", "True"]
    data = json.loads(report.read_text())
    assert data["processes"] == 2 and data["redirected"]["torch.ones(device=)"] == 1


@pytest.mark.subprocess
@pytest.mark.torch
def test_amp_profiler_and_generators(tmp_path):
    path = script(tmp_path, "amp.py", """
        import torch
        from torch.profiler import ProfilerActivity, profile

        class Double(torch.autograd.Function):
            @staticmethod
            @torch.cuda.amp.custom_fwd
            def forward(ctx, x):
                return x * 2

            @staticmethod
            @torch.amp.custom_bwd(device_type="cuda")
            def backward(ctx, g):
                return g * 2

        lin = torch.nn.Linear(2, 2)
        x = torch.ones(1, 2, requires_grad=True)
        with torch.autocast("cuda"):
            a = lin(x)
        with torch.autocast(device_type="cuda", dtype=torch.bfloat16):
            b = lin(x)
        with torch.cuda.amp.autocast(enabled=False):
            c = lin(x)
        Double.apply(x).sum().backward()
        scaler = torch.amp.GradScaler("cuda")
        g = torch.Generator(device="cuda").manual_seed(3)
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
            torch.randn(4, device="cuda", generator=g).sum()
        print(a.dtype, b.dtype, c.dtype, x.grad.tolist(), scaler._device, g.device, isinstance(g, torch.Generator),
              any(e.key == "aten::sum" for e in prof.key_averages()))
    """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0, err
    assert out.split()[:6] == ["torch.bfloat16", "torch.bfloat16", "torch.float32", "[[2.0,", "2.0]]", "cpu"]
    assert out.split()[6:] == ["cpu", "True", "True"]
    data = json.loads(report.read_text())
    assert data["dropped"] == {"torch.profiler.ProfilerActivity.CUDA": 1}
    assert data["redirected"]["torch.autocast(device_type)"] == 2
    assert data["redirected"]["torch.amp.custom_bwd(device_type)"] == 1


@pytest.mark.subprocess
@pytest.mark.torch
def test_amp_dtype_float16_keeps_the_overflow_bfloat16_hides(tmp_path):
    """issue 32 item 5: AMP on the cpu target always became bfloat16, so `debug nan --to cpu` found no NaN in a
    script whose float16 activations overflow 65504.  --amp-dtype float16 keeps CUDA's dtype, and the report and
    the NaN hunt say which dtype ran."""
    path = script(tmp_path, "overflow.py", """\
        import torch
        x = torch.full((4, 4), 300.0, device="cuda")
        w = torch.full((4, 4), 100.0, device="cuda")
        with torch.autocast("cuda"):
            y = x @ w            # 120000: over float16's 65504
            z = y - y
        print("dtype", y.dtype, "finite", bool(torch.isfinite(z).all()))
        """)
    report = tmp_path / "r.json"
    for option, dtype, finite, note in (((), "bfloat16", True, "runs as bfloat16"),
                                        (("--amp-dtype", "float16"), "float16", False, "stays float16")):
        code, out, err = torchport_run("--to", "cpu", *option, "--report", str(report), str(path))
        assert code == 0 and f"dtype torch.{dtype} finite {finite}" in out, out + err
        assert any(note in n for n in json.loads(report.read_text())["notes"])
    hunt = [sys.executable, "-m", "torchport", "debug", "nan", "--to", "cpu"]
    p = run_program([*hunt, "--", "python", str(path)], capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode == 0 and "note: CUDA autocast float16 runs as bfloat16" in p.stderr, p.stderr
    p = run_program([*hunt, "--amp-dtype", "float16", "--", "python", str(path)], capture_output=True, text=True,
                    env=ENV, timeout=300)
    assert p.returncode == 1 and "aten::mm" in p.stderr, p.stderr


@pytest.mark.subprocess
@pytest.mark.torch
def test_imports_probes_event_methods_and_first_call_sites_in_the_report(tmp_path):
    """issue 32 item 6: `from torch.cuda import X` of a name the target lacks said only "cannot import name"; a
    hasattr probe was counted as a failure; Event/Stream methods were not counted; the report gave no call site."""
    path = script(tmp_path, "probe.py", """\
        import torch
        print("has", hasattr(torch.cuda, "CUDAGraph"))
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record(); x = torch.ones(8).cuda() * 2; b.record(); b.synchronize()
        print("timed", a.elapsed_time(b) >= 0)
        try:
            from torch.cuda import CUDAGraph
        except ImportError as e:
            print("import:", e)
        """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0 and "has False" in out and "timed True" in out, out + err
    assert "import: torch.cuda.CUDAGraph has no counterpart on CPU" in out, out
    data = json.loads(report.read_text())
    assert data["probed"] == {"torch.cuda.CUDAGraph": 1} and data["failed"] == {"torch.cuda.CUDAGraph": 1}
    assert data["redirected"]["torch.cuda.Event.record"] == 2 and data["redirected"]["torch.cuda.Event.elapsed_time"] == 1
    assert data["first_call"]["torch.cuda.CUDAGraph"].endswith("probe.py:2")
    assert data["first_call"]["torch.Tensor.cuda"].endswith("probe.py:4")


@pytest.mark.subprocess
@pytest.mark.torch
def test_a_disabled_autocast_is_not_said_to_run_as_bfloat16(tmp_path):
    """A new user's trial (schedulefree 1.4.1 with --no-amp): autocast(enabled=False) and
    torch.cuda.amp.autocast(enabled=False) were counted as 'torch.autocast(float16)' and the report said CUDA's
    float16 ran as bfloat16, though no AMP ran at all."""
    path = script(tmp_path, "off.py", """\
        import torch
        lin = torch.nn.Linear(2, 2)
        with torch.autocast("cuda", enabled=False):
            a = lin(torch.ones(1, 2))
        with torch.autocast("cuda", torch.float16, False):
            b = lin(torch.ones(1, 2))
        with torch.cuda.amp.autocast(enabled=False):
            c = lin(torch.ones(1, 2))
        print(a.dtype, b.dtype, c.dtype)
        """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0 and out.split() == ["torch.float32"] * 3, out + err
    data = json.loads(report.read_text())
    assert data["notes"] == [] and "torch.autocast(float16)" not in data["redirected"], data
    assert "bfloat16" not in err


@pytest.mark.subprocess
@pytest.mark.torch
def test_cudas_math_settings_set_the_targets_and_are_counted(tmp_path):
    """A new user's trial (schedulefree 1.4.1): `torch.backends.cuda.matmul.allow_tf32 = True` under run left the
    target's setting untouched and the report silent, while convert maps it (npu: torch.npu.matmul.allow_hf32)."""
    path = script(tmp_path, "tf32.py", """\
        import torch
        torch.backends.cuda.matmul.allow_tf32 = True
        torch.backends.cudnn.allow_tf32 = False
        torch.backends.cudnn.benchmark = True
        print("tf32", torch.backends.cuda.matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
        """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0 and "tf32 True False" in out, out + err
    data = json.loads(report.read_text())
    assert data["noop"]["torch.backends.cuda.matmul.allow_tf32 (set)"] == 1
    assert data["noop"]["torch.backends.cudnn.benchmark (set)"] == 1
    # the mapping to the target's setting: test_real_scripts, on the simulated npu, mlu and musa


@pytest.mark.subprocess
@pytest.mark.torch
def test_an_import_from_torch_cuda_counts_the_calls_not_the_import(tmp_path):
    """A new user's trial (torchkge 0.17.7): `from torch.cuda import empty_cache, synchronize` that called nothing
    was counted as one call of each, with the import line as the first call site."""
    path = script(tmp_path, "imp.py", """\
        from torch.cuda import synchronize
        import torch
        for _ in range(3):
            synchronize()
        print("ok")
        """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0, err
    data = json.loads(report.read_text())
    assert data["redirected"]["torch.cuda.synchronize"] == 3
    assert data["first_call"]["torch.cuda.synchronize"].endswith("imp.py:4")


@pytest.mark.subprocess
@pytest.mark.torch
def test_a_library_told_cudas_real_answer_is_said_in_the_report(tmp_path):
    """A new user's trial (pfrl 0.4.0, torchkge 0.17.7): under the default --policy project an installed library
    asked torch.cuda.is_available(), was told False, took its CPU branch (or asserted) and failed later, and the
    report never said a library had been told so."""
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text("import torch\n\ndef pick():\n    return 'cuda' if torch.cuda.is_available() else 'cpu'\n")
    path = script(tmp_path, "uselib.py", f"""\
        import sys
        sys.path.insert(0, {str(tmp_path / 'site-packages')!r})
        import fakelib
        print(fakelib.pick())
        """)
    report = tmp_path / "r.json"
    code, out, err = torchport_run("--to", "cpu", "--report", str(report), str(path))
    assert code == 0 and out.strip() == "cpu", out + err
    notes = json.loads(report.read_text())["notes"]
    assert any("fakelib" in n and "--policy always" in n for n in notes), notes
    code, out, err = torchport_run("--to", "cpu", "--policy", "always", "--report", str(report), str(path))
    assert code == 0 and json.loads(report.read_text())["notes"] == []


@pytest.mark.subprocess
@pytest.mark.torch
def test_is_nccl_available_answers_for_the_backend_nccl_runs_as(tmp_path):
    """A new user's trial (pytorch-ignite 0.5.5): under `torchport run --to cpu` torch.cuda.is_available() was True
    and torch.distributed.is_nccl_available() False, so ignite, which builds its backends from is_<name>_available(),
    rejected "nccl" (`ValueError: Unknown backend 'nccl'`) although init_process_group runs "nccl" as gloo.  Both
    questions now follow one caller policy; is_backend_available("nccl") agrees, other backends are torch's answer."""
    lib = tmp_path / "site-packages" / "fakelib"
    lib.mkdir(parents=True)
    (lib / "__init__.py").write_text(textwrap.dedent("""
        import torch.distributed as dist
        def backends():   # ignite/distributed/comp_models/native.py's shape
            return [n for n in ("nccl", "gloo", "mpi") if getattr(dist, f"is_{n}_available")()]
    """))
    path = script(tmp_path, "ask.py", f"""
        import sys
        sys.path.insert(0, {str(lib.parent)!r})
        import torch, torch.distributed as dist, fakelib
        print(torch.cuda.is_available(), dist.is_nccl_available(), dist.distributed_c10d.is_nccl_available(),
              dist.is_backend_available("nccl"), dist.is_backend_available("gloo"), fakelib.backends())
    """)
    results = {}
    for policy in ("project", "always", "real"):
        code, out, err = torchport_run("--to", "cpu", "--policy", policy, str(path))
        assert code == 0, err
        results[policy] = out.strip()
    assert results["project"] == "True True True True True ['gloo']"   # a library is told CUDA's answer, as for is_available
    assert results["always"] == "True True True True True ['nccl', 'gloo']"
    assert results["real"] == "False False False False True ['gloo']"
    code, out, err = python("import torch.distributed as d; print(d.is_nccl_available())")
    assert code == 0 and out.strip() == "False", "unpatched, CPU torch answers False"


def test_a_folder_pip_installed_into_holds_libraries_whatever_its_name(tmp_path):
    """A new user's trial: a library installed with `pip install --target DIR` (DIR on PYTHONPATH, no
    'site-packages' in its path) counted as the project's code for --policy project."""
    from torchport.runtime.callers import is_library_file, library_name

    (tmp_path / "deps" / "fakelib").mkdir(parents=True)
    (tmp_path / "deps" / "fakelib-1.0.dist-info").mkdir()
    lib = tmp_path / "deps" / "fakelib" / "core.py"
    lib.write_text("x = 1\n")
    mine = tmp_path / "project" / "train.py"
    mine.parent.mkdir()
    mine.write_text("x = 1\n")
    assert is_library_file(str(lib)) and library_name(str(lib)) == "fakelib"
    assert not is_library_file(str(mine))


@pytest.mark.subprocess
@pytest.mark.torch
def test_a_missing_api_traceback_ends_at_the_users_line(tmp_path):
    """torchport's refusal of an API the target lacks is printed like Python's own error at the line that asked for
    it: no frame of torchport's runtime (patches.py) is the last one a user reads."""
    path = script(tmp_path, "graph.py", """\
        import torch

        def capture():
            return torch.cuda.CUDAGraph()

        capture()
        """)
    code, out, err = torchport_run("--to", "cpu", str(path))
    assert code == 1 and "TorchportMissing: torch.cuda.CUDAGraph has no counterpart on CPU" in err, err
    frames = [line for line in err.splitlines() if line.strip().startswith('File "')]
    assert frames and frames[-1].strip().startswith(f'File "{path}", line 4, in capture'), err
    assert "/torchport/runtime/" not in err and "Traceback (most recent call last):" in err


@pytest.mark.subprocess
@pytest.mark.torch
def test_the_cpu_target_says_it_told_the_project_cuda_is_available(tmp_path):
    """A new user's trial (lion-pytorch 0.2.5): `use_triton=torch.cuda.is_available()` took Triton's CUDA path under
    `run --to cpu`, and nothing in the report said the project had been told CUDA was there."""
    path = script(tmp_path, "ask.py", """\
        import torch
        print("avail", torch.cuda.is_available(), torch.cuda.is_available())
        """)
    for policy, told in (("project", True), ("real", False)):
        report = tmp_path / f"{policy}.json"
        code, out, err = torchport_run("--to", "cpu", "--policy", policy, "--report", str(report), str(path))
        notes = json.loads(report.read_text())["notes"]
        assert code == 0 and f"avail {told} {told}" in out, out + err
        said = [n for n in notes if "was told True" in n]
        assert len(said) == (1 if told else 0), notes
