"""torchport doctor: each check fails (or warns) on a faked environment and passes on a good one."""
import fnmatch
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
    """A machine described by dicts: distributions, their requirements, importable modules, files (device
    nodes among them), nodes this user may not open, their groups, program outputs."""

    def __init__(self, dists=None, requires=None, modules_found=(), files=None, denied=(), groups=None,
                 outputs=None, **kw):
        kw.setdefault("cwd", "/home/u/project")
        super().__init__(**kw)
        self.dists, self.reqs = dists or {}, requires or {}
        self.found, self.files = set(modules_found), files or {}
        self.denied, self.groups, self.outputs = set(denied), groups or {}, outputs or {}

    def version(self, dist):
        return self.dists.get(dist)

    def requires(self, dist):
        return self.reqs.get(dist, [])

    def find(self, module):
        return f"/site/{module}/__init__.py" if module in self.found else None

    def read(self, path):
        return self.files.get(path)

    def glob(self, pattern):
        return sorted(p for p in self.files if fnmatch.fnmatchcase(p, pattern))

    def exists(self, path):
        return path in self.files

    def access(self, path):
        return path in self.files and path not in self.denied

    def group(self, path):
        return self.groups.get(path)

    def realpath(self, path):
        return path.rstrip("/")

    def dist_dir(self, dist):
        return "/site" if dist in self.dists else None

    def output(self, argv):
        return self.outputs.get(argv[0])


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


@pytest.mark.subprocess
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
    sysfs = "/sys/cpu*/scaling_governor"
    slow = FakeProbe(files={"/sys/cpu0/scaling_governor": "powersave\n", "/sys/cpu1/scaling_governor": "performance\n"},
                     environ={}, governor_files=sysfs)
    rows = by_name(C.check_cpu(slow, NPU))
    assert rows["cpu governor"].status == WARN and "cpupower frequency-set -g performance" in rows["cpu governor"].fix
    assert rows["OMP_NUM_THREADS"].status == WARN
    fast = FakeProbe(files={"/sys/cpu0/scaling_governor": "performance\n"}, environ={"OMP_NUM_THREADS": "4"},
                     governor_files=sysfs)
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


@pytest.mark.subprocess
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
    cann = tmp_path / "ascend-toolkit" / "latest"
    (cann / "x86_64-linux").mkdir(parents=True)
    (cann / "x86_64-linux" / "ascend_toolkit_install.info").write_text("package_name=Ascend-cann-toolkit\nversion=8.5.0\n")
    env = dict(ENV, PYTHONPATH=os.pathsep.join([str(ROOT / "src"), str(site)]),
               PATH=os.pathsep.join([str(bindir), os.environ.get("PATH", "")]), OMP_NUM_THREADS="2",
               CUDA_VISIBLE_DEVICES="3", ASCEND_HOME_PATH=str(cann), **{var: "/opt/x" for var in NPU.doctor.env})
    p = subprocess.run([sys.executable, "-m", "torchport", "doctor", "--to", "npu"], capture_output=True, text=True,
                       env=env)
    assert p.returncode == 1, p.stdout
    assert "FAIL  torch_npu package: torch_npu 2.12.0 for torch 2.12.0" in p.stdout
    assert "WARN  CUDA_VISIBLE_DEVICES" in p.stdout and "ok    npu-smi" in p.stdout
    assert "FAIL  CANN version: torch_npu 2.12.0 needs CANN 9.1.0; found CANN 8.5.0" in p.stdout
    assert "fix: install CANN 9.1.0, or a torch_npu release made for CANN 8.5.0: torch_npu 2.9.0 with torch 2.9.0" \
        in p.stdout
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


# ----------------------------------------------------------------- the vendor stack (doctor/stack.py)
from torchport.doctor import stack as S  # noqa: E402

MLU, MUSA, XPU = load_target("mlu"), load_target("musa"), load_target("xpu")
HOME = "/usr/local/Ascend/ascend-toolkit/latest"
CANN_INFO = HOME + "/aarch64-linux/ascend_toolkit_install.info"


def cann_info(version):
    """ascend_toolkit_install.info as Ascend's FaultDiag guide prints it (Query the CANN version)."""
    return (f"package_name=Ascend-cann-toolkit\nversion={version}\ninnerversion=V100R001C25SPC001B212\n"
            "compatible_version=[V100R001C15],[V100R001C18]\narch=aarch64\nos=linux\npath=/usr/local/Ascend\n")


def npu_machine(torch_npu, cann, torch="2.1.0", **kw):
    """An Ascend machine with torch_npu and CANN of the versions given (cann None: no version file)."""
    files = {"/site/torch/version.py": f"__version__ = '{torch}'\ncuda = None\n"}
    if cann is not None:
        files[CANN_INFO] = cann_info(cann)
    files.update(kw.pop("files", {}))
    return FakeProbe(dists={"torch": torch, "torch-npu": torch_npu}, modules_found={"torch", "torch_npu"},
                     files=files, environ=kw.pop("environ", {"ASCEND_HOME_PATH": HOME}), **kw)


def test_mismatched_torch_npu_and_cann_fail_naming_the_matching_pair():
    row, = S.check_toolkit(npu_machine("2.1.0.post3", "7.0.0"), NPU)
    assert row.status == FAIL, row
    assert "torch_npu 2.1.0.post3 needs CANN 8.0.RC1; found CANN 7.0.0" in row.detail and CANN_INFO in row.detail
    # the fix names both ways out: the CANN this torch_npu needs, or the torch_npu made for the CANN found
    assert row.fix == "install CANN 8.0.RC1, or torch_npu 2.1.0 (made for CANN 7.0.0)"
    newer, = S.check_toolkit(npu_machine("2.6.0", "8.0.0", torch="2.6.0"), NPU)
    assert newer.status == FAIL and "needs CANN 8.2.RC1" in newer.detail
    assert "torch_npu 2.4.0.post2 with torch 2.4.0" in newer.fix   # nothing for torch 2.6.0 and CANN 8.0.0


@pytest.mark.parametrize("torch_npu, cann", [
    ("2.1.0.post3", "8.0.RC1"), ("2.1.0.post4", "8.0.RC1"),
    ("2.1.0.post4", "8.0.RC1.alpha003"),   # a community build of 8.0.RC1
    ("2.1.0rc1", "7.0.RC1"),               # the package's metadata spells 2.1.0.rc1 the PEP 440 way
    ("2.1.0.post8.dev20241009+git1234", None)])
def test_a_matching_pair_passes_and_nothing_else_does(torch_npu, cann):
    row, = S.check_toolkit(npu_machine(torch_npu, cann), NPU)
    if cann is None:
        assert row.status == WARN and row.detail.startswith("unverified: no CANN version found") \
            and "ASCEND_HOME_PATH" in row.fix
    else:
        assert row.status == OK and f"CANN {cann}" in row.detail and "was made for (source: https://" in row.detail


def test_what_cannot_be_verified_is_a_warning_never_ok():
    no_line = npu_machine("2.1.0.post4", None, files={CANN_INFO: "package_name=Ascend-cann-toolkit\n"})
    assert S.check_toolkit(no_line, NPU)[0].status == WARN
    unlisted_package = S.check_toolkit(npu_machine("2.1.0.post99", "8.0.RC1"), NPU)[0]
    assert unlisted_package.status == WARN and "2.1.0.post99 is not in torchport's table" in unlisted_package.detail
    unlisted_cann = S.check_toolkit(npu_machine("2.1.0.post4", "10.0.0"), NPU)[0]
    assert unlisted_cann.status == WARN and "CANN 10.0.0 is not in torchport's table" in unlisted_cann.detail \
        and "install CANN 8.0.RC1" in unlisted_cann.fix
    no_env = npu_machine("2.1.0.post4", None, environ={}, files={
        "/usr/local/Ascend/cann/x86_64-linux/ascend_toolkit_install.info": cann_info("8.0.RC1")})
    assert S.check_toolkit(no_env, NPU)[0].status == OK   # found at the CANN >= 8.5 default place
    assert S.check_toolkit(FakeProbe(environ={}, files={CANN_INFO: cann_info("8.0.RC1")}), NPU)[0].status == SKIP
    assert S.check_toolkit(FakeProbe(), load_target("cpu")) == []


def test_the_driver_version_is_read_but_not_paired():
    info = "/usr/local/Ascend/driver/version.info"
    row, = S.check_driver(FakeProbe(files={info: "Version=24.1.rc1\nascendhal_version=7.35.19\n"}), NPU)
    assert row.status == OK and "Ascend driver 24.1.rc1" in row.detail and "not checked" in row.detail
    row, = S.check_driver(FakeProbe(), NPU)
    assert row.status == WARN and row.detail.startswith("unverified") and f"-v {info}:{info}" in row.fix
    header = ("+-------------------------------------+\n"
              "| npu-smi 23.0.rc3          Version: 23.0.rc2.3                |\n")   # the FaultDiag guide's sample
    smi = FakeProbe(which=lambda name: "/usr/local/bin/npu-smi" if name == "npu-smi" else None,
                    outputs={"/usr/local/bin/npu-smi": header})
    row, = S.check_driver(smi, NPU)
    assert row.status == OK and "Ascend driver 23.0.rc2.3 (/usr/local/bin/npu-smi info)" in row.detail


def test_musa_sdk_version_from_its_program_and_mlu_from_neuware():
    # musa_toolkits_version's output as pasted in MooreThreads/torch_musa issue 102
    printed = 'musa_toolkits:\n{\n\t"version":\t"4.2.0",\n\t"git branch":\t"release_musa_4.2.0"\n}\n'
    tool = "/opt/musa/bin/musa_toolkits_version"
    machine = dict(dists={"torch": "2.5.0", "torch-musa": "2.1.0"}, environ={"MUSA_HOME": "/opt/musa"},
                   files={tool: ""}, outputs={tool: printed})
    row, = S.check_toolkit(FakeProbe(**machine), MUSA)
    assert row.status == OK and "MUSA SDK 4.2.0" in row.detail
    old_sdk = FakeProbe(**dict(machine, outputs={tool: "musa_toolkits version: 4.0.1\n"}))
    row, = S.check_toolkit(old_sdk, MUSA)
    # Moore Threads publishes no compatibility table (the pairs come from image tags): a warning, not a failure
    assert row.status == WARN and "torch_musa 2.1.0 needs MUSA SDK 4.2.0; found MUSA SDK 4.0.1" in row.detail
    assert "torch_musa 2.0.0 with torch 2.2.0" in row.fix
    neuware = FakeProbe(dists={"torch": "2.1.0", "torch-mlu": "1.22.2+torch2.1.0"}, environ={},
                        files={"/usr/local/neuware/version.txt": "Neuware Version 3.13.5\n"})
    row, = S.check_toolkit(neuware, MLU)
    assert row.status == OK and "CNToolkit 3.13.5" in row.detail and "build.property" in row.detail


def test_reading_versions_from_real_files(tmp_path):
    """The real Probe: $ASCEND_HOME_PATH expanded, the glob over <arch>-linux, the file read."""
    (tmp_path / "x86_64-linux").mkdir()
    (tmp_path / "x86_64-linux" / "ascend_toolkit_install.info").write_text(cann_info("8.0.RC2"))
    probe = Probe(environ={"ASCEND_HOME_PATH": str(tmp_path) + "/"})
    version, where = S.read_version(probe, NPU.doctor.toolkit)
    assert (version, where) == ("8.0.RC2", str(tmp_path / "x86_64-linux" / "ascend_toolkit_install.info"))
    assert S.read_version(Probe(environ={}), {"files": ["$UNSET_HOME/x.info"], "pattern": "(x)"}) == (None, [])


DAVINCI = ["/dev/davinci0", "/dev/davinci_manager", "/dev/devmm_svm", "/dev/hisi_hdc"]


def test_device_nodes_missing_or_closed_fail_with_the_fix():
    host = FakeProbe(platform="linux", files=dict.fromkeys(DAVINCI[1:], ""))
    row, = S.check_devices(host, NPU)
    assert row.status == FAIL and row.detail == "no /dev/davinci[0-9]*" and "driver" in row.fix
    container = FakeProbe(platform="linux", files={"/.dockerenv": ""}, environ={"ASCEND_VISIBLE_DEVICES": "0"})
    row, = S.check_devices(container, NPU)
    assert row.status == FAIL and "in this container although ASCEND_VISIBLE_DEVICES=0 is set" in row.detail
    assert "--device /dev/davinci0 --device /dev/davinci_manager" in row.fix and "Ascend Docker Runtime" in row.fix
    closed = FakeProbe(platform="linux", files=dict.fromkeys(DAVINCI, ""), denied={"/dev/davinci0"},
                       groups={"/dev/davinci0": "HwHiAiUser"})
    row, = S.check_devices(closed, NPU)
    assert row.status == FAIL and "/dev/davinci0 (group HwHiAiUser)" in row.detail
    assert "sudo usermod -aG HwHiAiUser $USER" in row.fix
    row, = S.check_devices(FakeProbe(platform="linux", files=dict.fromkeys(DAVINCI, "")), NPU)
    assert row.status == OK and row.detail.startswith("4 readable and writable")
    render = FakeProbe(platform="linux", files={"/dev/dri/renderD128": ""}, denied={"/dev/dri/renderD128"},
                       groups={"/dev/dri/renderD128": "render"})
    assert "usermod -aG render" in S.check_devices(render, XPU)[0].fix
    assert S.check_devices(FakeProbe(platform="darwin"), NPU)[0].status == SKIP
    assert S.check_devices(FakeProbe(platform="linux"), load_target("cpu")) == []


@pytest.mark.parametrize("shadow", ["/home/u/project/torch.py", "/home/u/project/torch/__init__.py",
                                    "/home/u/project/torch_npu/__init__.py", "/work/libs/torch.py"])
def test_a_module_shadowing_torch_or_the_vendor_package_fails(shadow):
    probe = good_npu(files={shadow: ""}, environ={"PYTHONPATH": "/work/libs"})
    row, = S.check_shadowing(probe, NPU)
    assert row.status == FAIL and f"{shadow} would be imported as" in row.detail and "rename or move it" in row.fix


def test_no_shadowing_module_passes():
    assert S.check_shadowing(good_npu(files={"/home/u/project/torch_utils.py": ""}), NPU)[0].status == OK
    # run from the folder the package is installed in: that torch is the installed one
    assert S.check_shadowing(good_npu(cwd="/site", files={"/site/torch/__init__.py": ""}), NPU)[0].status == OK


def test_the_compatibility_table_is_sourced_data():
    tables = S.compatibility()
    for target, table in tables.items():
        assert load_target(target).doctor.toolkit, target        # the version it pairs can be read
        assert table["source"].startswith("https://") and table["on_mismatch"] in ("fail", "warn")
        for row in table["releases"]:
            assert set(row) <= {"package", "torch", "toolkit", "source"} and all(row[k] for k in
                                                                                  ("package", "torch", "toolkit"))
    npu = {(r["package"], r["toolkit"]) for r in tables["npu"]["releases"]}
    assert {("2.1.0.post4", "8.0.RC1"), ("2.1.0", "7.0.0"), ("2.12.0", "9.1.0")} <= npu


def test_a_bad_version_pattern_in_a_target_file_is_one_line(tmp_path):
    from torchport.core.errors import UsageError

    path = tmp_path / "t.toml"
    path.write_text('name = "t"\ntitle = "T"\nnamespace = "torch.t"\ndevice = "t"\n'
                    '[doctor.toolkit]\nname = "SDK"\nfiles = ["/x"]\npattern = "version=\\\\S+"\nsource = "s"\n')
    with pytest.raises(UsageError) as e:
        load_target(str(path))
    assert "'doctor.toolkit.pattern' needs a group" in str(e.value)


@pytest.mark.subprocess
def test_cli_doctor_on_this_machine_and_a_shadowing_torch_py(tmp_path):
    """The real doctor: `--to cpu` passes from a clean folder and fails from one holding a torch.py."""
    env = dict(ENV, OMP_NUM_THREADS="2")
    cmd = [sys.executable, "-m", "torchport", "doctor", "--to", "cpu"]
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "ok    shadowing modules: no torch module in the current folder" in p.stdout
    (tmp_path / "torch.py").write_text("raise SystemExit('the wrong torch')\n")
    p = subprocess.run(cmd, capture_output=True, text=True, env=env, cwd=tmp_path)
    assert p.returncode == 1 and f"FAIL  shadowing modules: {tmp_path / 'torch.py'} would be imported" in p.stdout
