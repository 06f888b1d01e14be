"""torchport doctor: each check fails (or warns) on a faked environment and passes on a good one."""
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.backends import load_target
from torchport.doctor import FAIL, OK, SKIP, WARN, Probe, run_checks
from torchport.doctor import checks as C

NPU = load_target("npu")
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


class FakeProbe(Probe):
    """A machine described by dicts: distributions, their requirements, importable modules."""

    def __init__(self, dists=None, requires=None, modules_found=(), files=None, **kw):
        super().__init__(**kw)
        self.dists, self.reqs = dists or {}, requires or {}
        self.found, self.files = set(modules_found), files or {}

    def version(self, dist):
        return self.dists.get(dist)

    def requires(self, dist):
        return self.reqs.get(dist, [])

    def find(self, module):
        return f"/site/{module}/__init__.py" if module in self.found else None

    def read(self, path):
        return self.files.get(path)

    def glob(self, pattern):
        return sorted(p for p in self.files if p.startswith("/sys/"))


def by_name(rows):
    return {r.name: r for r in rows}


def good_npu(**kw):
    """A well set-up Ascend machine; keyword arguments replace any part of it."""
    base = dict(dists={"torch": "2.14.0", "torch-npu": "2.14.0"}, modules_found={"torch", "torch_npu"},
                files={"/site/torch/version.py": "__version__ = '2.14.0'\ncuda = None\n"},
                environ={"OMP_NUM_THREADS": "8"}, which=lambda n: None)
    return FakeProbe(**{**base, **kw})


def test_python_and_torch():
    assert C.check_python(FakeProbe(python=(3, 8, 10)), NPU).status == FAIL
    assert C.check_python(FakeProbe(python=(3, 11, 2)), NPU).status == OK
    assert C.check_torch(FakeProbe(), NPU).status == FAIL
    cuda = FakeProbe(dists={"torch": "2.14.0"}, modules_found={"torch"},
                     files={"/site/torch/version.py": "cuda: Optional[str] = '12.4'\n"})
    row = C.check_torch(cuda, NPU)
    assert row.status == WARN and "CUDA 12.4 build" in row.detail and "CPU build" in row.fix


def test_vendor_package_versions():
    assert C.check_vendor(good_npu(), NPU).status == OK
    assert C.check_vendor(FakeProbe(dists={"torch": "2.14.0"}), NPU).status == FAIL
    mismatch = good_npu(dists={"torch": "2.13.0", "torch-npu": "2.14.0"})
    row = C.check_vendor(mismatch, NPU)
    assert row.status == FAIL and "must match" in row.detail
    pinned = good_npu(requires={"torch-npu": ["torch==2.12.0", "pyyaml"]})
    row = C.check_vendor(pinned, NPU)
    assert row.status == FAIL and "for torch 2.12.0" in row.detail and "built for another torch" in row.detail
    assert C.check_vendor(FakeProbe(), load_target("cpu")).status == SKIP


def test_visibility_variables():
    rows = by_name(C.check_visibility(good_npu(environ={"CUDA_VISIBLE_DEVICES": "0,1"}), NPU))
    assert rows["CUDA_VISIBLE_DEVICES"].status == WARN and "export ASCEND_RT_VISIBLE_DEVICES=0,1" in \
        rows["CUDA_VISIBLE_DEVICES"].fix
    rows = by_name(C.check_visibility(good_npu(environ={"ASCEND_RT_VISIBLE_DEVICES": "0,a"}), NPU))
    assert rows["ASCEND_RT_VISIBLE_DEVICES"].status == FAIL
    late = good_npu(environ={"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, modules={"torch_npu": object()},
                    device_count=lambda target: 8)
    row = by_name(C.check_visibility(late, NPU))["ASCEND_RT_VISIBLE_DEVICES"]
    assert row.status == FAIL and "set after torch_npu initialised" in row.detail
    early = good_npu(environ={"ASCEND_RT_VISIBLE_DEVICES": "0,1"}, modules={"torch_npu": object()},
                     device_count=lambda target: 2)
    assert by_name(C.check_visibility(early, NPU))["ASCEND_RT_VISIBLE_DEVICES"].status == OK


def test_management_tool_on_path(tmp_path):
    tool = tmp_path / "npu-smi"
    tool.write_text("#!/bin/sh\necho 'npu-smi 23.0.0 Version'\nexit 0\n")
    tool.chmod(0o755)
    probe = good_npu(which=lambda name: str(tool) if name == "npu-smi" else None)
    row = C.check_tool(probe, NPU)
    assert row.status == OK and "npu-smi 23.0.0" in row.detail
    tool.write_text("#!/bin/sh\necho 'dcmi module initialize failed' >&2\nexit 1\n")
    row = C.check_tool(probe, NPU)
    assert row.status == FAIL and "dcmi module initialize failed" in row.detail
    assert C.check_tool(good_npu(), NPU).status == FAIL
    assert C.check_tool(FakeProbe(), load_target("cpu")).status == SKIP


@pytest.mark.parametrize("environ, status", [
    ({}, OK),
    ({"RANK": "0"}, FAIL),
    ({"MASTER_ADDR": "h", "MASTER_PORT": "x", "RANK": "0", "WORLD_SIZE": "2"}, FAIL),
    ({"MASTER_ADDR": "h", "MASTER_PORT": "29500", "RANK": "2", "WORLD_SIZE": "2"}, FAIL),
    ({"MASTER_ADDR": "h", "MASTER_PORT": "29500", "RANK": "1", "WORLD_SIZE": "2"}, OK),
])
def test_distributed_variables(environ, status):
    assert C.check_distributed(FakeProbe(environ=environ), NPU).status == status


def test_cpu_settings():
    slow = FakeProbe(files={"/sys/cpu0/scaling_governor": "powersave\n", "/sys/cpu1/scaling_governor": "performance\n"},
                     environ={})
    rows = by_name(C.check_cpu(slow, NPU))
    assert rows["cpu governor"].status == WARN and "cpupower frequency-set -g performance" in rows["cpu governor"].fix
    assert rows["OMP_NUM_THREADS"].status == WARN
    fast = FakeProbe(files={"/sys/cpu0/scaling_governor": "performance\n"}, environ={"OMP_NUM_THREADS": "4"})
    rows = by_name(C.check_cpu(fast, NPU))
    assert rows["cpu governor"].status == OK and rows["OMP_NUM_THREADS"].status == OK
    assert by_name(C.check_cpu(FakeProbe(environ={"OMP_NUM_THREADS": "zero"}), NPU))["OMP_NUM_THREADS"].status == FAIL


def test_required_env_from_target_data():
    rows = run_checks(NPU, good_npu(environ={"OMP_NUM_THREADS": "2"}))
    for var in NPU.doctor.env:
        assert by_name(rows)[var].status == FAIL
    env = {var: "/usr/local/Ascend" for var in NPU.doctor.env}
    rows = run_checks(NPU, good_npu(environ={"OMP_NUM_THREADS": "2", **env}))
    assert all(by_name(rows)[var].status == OK for var in env)


def test_misconfigurations():
    probe = good_npu(environ={"TORCHPORT_TARGET": "musa", "OMP_NUM_THREADS": "1"},
                     modules_found={"torch", "torch_npu", "torch_musa"})
    rows = by_name(C.check_misconfigurations(probe, NPU))
    assert rows["TORCHPORT_TARGET"].status == WARN and rows["vendor stacks"].status == WARN


def test_cli_with_a_fake_vendor_package_and_tool(tmp_path):
    site = tmp_path / "site"
    (site / "torch_npu").mkdir(parents=True)
    (site / "torch_npu" / "__init__.py").write_text("")
    info = site / "torch_npu-2.12.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: torch_npu\nVersion: 2.12.0\nRequires-Dist: torch==2.12.0\n")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "npu-smi").write_text("#!/bin/sh\necho ok\n")
    (bindir / "npu-smi").chmod(0o755)
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(site)]),
               PATH=os.pathsep.join([str(bindir), os.environ.get("PATH", "")]), OMP_NUM_THREADS="2",
               CUDA_VISIBLE_DEVICES="3", **{var: "/opt/x" for var in NPU.doctor.env})
    p = subprocess.run([sys.executable, "-m", "torchport", "doctor", "--to", "npu"], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 1, p.stdout
    assert "FAIL  torch_npu package: torch_npu 2.12.0 for torch 2.12.0" in p.stdout
    assert "WARN  CUDA_VISIBLE_DEVICES" in p.stdout and "ok    npu-smi" in p.stdout
    p = subprocess.run([sys.executable, "-m", "torchport", "doctor", "--to", "cpu", "--json"], capture_output=True,
                       text=True, env=dict(ENV, OMP_NUM_THREADS="2"))
    assert p.returncode == 0 and '"target": "cpu"' in p.stdout


def test_a_builtin_backend_needs_a_torch_that_has_it():
    """xpu: torch/version.py's `xpu` field (set only in XPU builds); mps: macOS only."""
    xpu, mps = load_target("xpu"), load_target("mps")
    cpu_build = dict(dists={"torch": "2.13.0"}, modules_found={"torch"},
                     files={"/site/torch/version.py": "cuda: Optional[str] = None\nxpu: Optional[str] = None\n"})
    row = C.check_torch(FakeProbe(**cpu_build), xpu)
    assert row.status == FAIL and "not built for Intel GPU" in row.detail and "whl/xpu" in row.fix
    xpu_build = dict(cpu_build, files={"/site/torch/version.py": "xpu: Optional[str] = '20250101'\n"})
    row = C.check_torch(FakeProbe(**xpu_build), xpu)
    assert row.status == OK and "XPU 20250101 build" in row.detail
    assert C.check_torch(FakeProbe(platform="linux", **cpu_build), mps).status == FAIL
    assert C.check_torch(FakeProbe(platform="darwin", **cpu_build), mps).status == OK
