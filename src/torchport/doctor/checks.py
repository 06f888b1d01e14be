"""`torchport doctor`: is this machine set up to run PyTorch on the target?  One row per check, with
its status (ok / warn / fail / skip), what was found, and the fix.

Every check reads the machine through a `Probe` (probe.py: environment, installed distributions, files
and device nodes, programs on PATH, the current folder), so tests can fake any of it.  What a target
needs (its package, variables, management tool, extra required variables, where its toolkit keeps
its version, its device nodes) comes from its target file: checks hold no vendor names of their
own.  The vendor-stack checks (versions, device nodes, shadowing modules) are in stack.py.
"""
from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Optional

from .probe import FAIL, OK, SKIP, WARN, Check, Probe

PLATFORMS = {"darwin": "macOS", "linux": "Linux", "win32": "Windows"}   # sys.platform -> its name
_MAJOR_MINOR = re.compile(r"(\d+)\.(\d+)")
# `cuda: Optional[str] = '12.1'` in torch/version.py: the annotation stays on its line (crossing lines, it
# would rescan the rest of the file from each line that starts with the key)
_BUILD_FIELDS = {key: re.compile(rf"^{key}\s*(?::[^=\n]*)?=\s*['\"]([^'\"]+)['\"]", re.MULTILINE)
                 for key in ("cuda", "hip", "xpu")}
# torch==2.1, torch (>=2.1): one run of blanks on each side of the parenthesis
_TORCH_PIN = re.compile(r"torch\s*(?:\(\s*)?(==|~=|>=)\s*([\w.+]+)")
_TORCH_IN_VERSION = re.compile(r"torch(\d+\.\d+(?:\.\d+)?)")            # a torch version a vendor's version names
_DEVICE_IDS = re.compile(r"\s*\d+(\s*,\s*\d+)*\s*")                        # 0,1 as *_VISIBLE_DEVICES lists them


# ----------------------------------------------------------------- helpers
def _minor(version: Optional[str]) -> Optional[tuple]:
    m = _MAJOR_MINOR.match(version or "")
    return (int(m.group(1)), int(m.group(2))) if m else None


def torch_build(probe: Probe) -> dict:
    """torch's version and build (cuda / hip / cpu) read from torch/version.py, without importing torch."""
    origin = probe.find("torch")
    if origin is None:
        return {}
    text = probe.read(str(Path(origin).parent / "version.py")) or ""
    info = {"version": probe.version("torch")}
    for key, regex in _BUILD_FIELDS.items():
        m = regex.search(text)
        info[key] = m.group(1) if m else None
    return info


def _torch_required(requires: list) -> Optional[str]:
    for req in requires:
        m = _TORCH_PIN.match(req)
        if m and m.group(1) == "==":
            return m.group(2)
    return None


# ----------------------------------------------------------------- the checks
def check_python(probe: Probe, target) -> Check:
    v = ".".join(map(str, probe.python))
    if probe.python < (3, 9):
        return Check("python", FAIL, f"Python {v}", "torchport and current PyTorch releases need Python 3.9 or newer")
    return Check("python", OK, f"Python {v}")


def check_torch(probe: Probe, target) -> Check:
    info = torch_build(probe)
    if not info:
        return Check("torch", FAIL, "torch is not installed",
                     f"install {target.torch_install or 'torch'} (pin the version: a bare `pip install torch` pulls "
                     "a multi-GB CUDA build)")
    build = f"CUDA {info['cuda']}" if info.get("cuda") else f"ROCm {info['hip']}" if info.get("hip") else \
        f"XPU {info['xpu']}" if info.get("xpu") else "CPU"
    detail = f"torch {info['version']} ({build} build)"
    needs = target.doctor
    if needs.platforms and probe.platform not in needs.platforms:
        where = ", ".join(PLATFORMS.get(p, p) for p in needs.platforms)
        return Check("torch", FAIL, detail + f": {target.title} exists only on {where}, this is "
                                             f"{PLATFORMS.get(probe.platform, probe.platform)}",
                     f"run on a machine with {target.title}")
    if needs.build and not info.get(needs.build):
        return Check("torch", FAIL, detail + f": this torch is not built for {target.title}",
                     f"install {target.torch_install}")
    if info.get("cuda") and target.register:
        return Check("torch", WARN, detail + f": {target.title} runs on the CPU build plus its extension",
                     f"install {target.torch_install}")
    return Check("torch", OK, detail)


def check_vendor(probe: Probe, target) -> Check:
    name = f"{target.register or 'extension'} package"
    if not target.register:
        return Check(name, SKIP, f"{target.title} needs no extension package")
    dist = target.register.replace("_", "-")
    version = probe.version(dist) or probe.version(target.register)
    if version is None and probe.find(target.register) is None:
        return Check(name, FAIL, f"{target.register} is not installed", f"install {target.torch_install}")
    torch_version = probe.version("torch")
    wanted = _torch_required(probe.requires(dist) or probe.requires(target.register))
    local = _TORCH_IN_VERSION.search(version or "")
    if wanted is None and local:
        wanted = local.group(1)
    detail = f"{target.register} {version or '(version unknown)'} for torch {wanted or '?'}; torch {torch_version}"
    if torch_version is None:
        return Check(name, FAIL, detail, "install torch first")
    if wanted is not None:
        if _minor(wanted) != _minor(torch_version):
            return Check(name, FAIL, detail + ": built for another torch",
                         f"install the {target.register} release made for torch {torch_version}, or torch {wanted}")
        return Check(name, OK, detail)
    if target.doctor.version_rule == "same-minor":  # the package's X.Y is the torch X.Y it was built for
        if _minor(version) != _minor(torch_version):
            return Check(name, FAIL, detail.replace("for torch ?", f"for torch {'.'.join(map(str, _minor(version) or ()))}")
                         + f": {target.register}'s version must match torch's",
                         f"install {target.register} {'.'.join(map(str, _minor(torch_version) or ()))}.x or the "
                         "matching torch")
        return Check(name, OK, detail.replace("for torch ?", f"for torch {'.'.join(map(str, _minor(version) or ()))}"))
    return Check(name, WARN, detail + ": cannot tell which torch it was built for",
                 f"check {target.register}'s release notes for the torch version it needs")


def check_visibility(probe: Probe, target) -> list:
    """Device-visibility and other CUDA variables: are the target's set where the CUDA ones are?"""
    env, rows = probe.environ, []
    for cuda_var, target_var in sorted(target.env.items()):
        if cuda_var not in env:
            continue
        if not target_var:
            rows.append(Check(cuda_var, WARN, f"{cuda_var}={env[cuda_var]} has no effect on {target.title}",
                              f"unset it; {target.title} has no such setting"))
        elif target_var not in env:
            rows.append(Check(cuda_var, WARN, f"{cuda_var}={env[cuda_var]} is set but {target_var} is not",
                              f"export {target_var}={env[cuda_var]} before starting Python "
                              f"(`torchport run --to {target.name}` maps it for you)"))
    var = target.visible_devices_env
    if var and var in env:
        value = env[var]
        if value and not _DEVICE_IDS.fullmatch(value):
            rows.append(Check(var, FAIL, f"{var}={value!r} is not a comma-separated list of device ids",
                              f"export {var}=0,1 (device ids as {target.smi or 'the vendor tool'} lists them)"))
        elif target.register and target.register in probe.modules and probe.device_count is not None:
            seen, listed = probe.device_count(target), len([v for v in value.split(",") if v.strip()])
            if seen is not None and seen != listed:
                rows.append(Check(var, FAIL, f"{var}={value} lists {listed} devices but {target.register} sees {seen}: "
                                  f"it was set after {target.register} initialised",
                                  f"set {var} before importing torch (in the shell, or first thing with torchport.auto)"))
            else:
                rows.append(Check(var, OK, f"{var}={value}"))
        else:
            rows.append(Check(var, OK, f"{var}={value}"))
    elif var:
        rows.append(Check(var, OK, f"{var} is not set: all devices are visible"))
    return rows


def check_required_env(probe: Probe, target) -> list:
    """Variables the target's toolkit needs (target file: [doctor] env = {VAR = "fix"}, or
    {VAR = {contains = "part", fix = "..."}} when the value must contain something)."""
    rows = []
    for var, need in sorted(target.doctor.env.items()):
        value = probe.environ.get(var)
        part, fix = (need.get("contains"), need.get("fix", "")) if isinstance(need, dict) else (None, need)
        if not value:
            rows.append(Check(var, FAIL, f"{var} is not set", fix))
        elif part and part not in value.split(os.pathsep) and part not in value:
            rows.append(Check(var, FAIL, f"{var} does not contain {part}", fix))
        else:
            rows.append(Check(var, OK, f"{var}={value}"))
    return rows


def check_tool(probe: Probe, target) -> Check:
    if not target.smi:
        return Check("management tool", SKIP, f"{target.title} has no device management tool")
    path = probe.which(target.smi)
    if path is None:
        return Check(target.smi, FAIL, f"{target.smi} is not on PATH",
                     f"install the {target.title} driver and put its tools on PATH")
    args = list(target.doctor.smi_args)
    code, line = probe.run([path, *args])
    if code != 0:
        return Check(target.smi, FAIL, f"`{target.smi} {' '.join(args)}` failed: {line or 'no output'}",
                     "check the driver and the device status (dmesg, driver logs)")
    return Check(target.smi, OK, f"{path}: {line}" if line else path)


def check_distributed(probe: Probe, target) -> Check:
    env = probe.environ
    keys = ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK")
    present = [k for k in keys if k in env]
    if not present:
        return Check("distributed", OK, "not set: single process (torchrun sets these for its workers)")
    missing = [k for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE") if k not in env]
    if missing:
        return Check("distributed", FAIL, f"{', '.join(present)} set but {', '.join(missing)} missing",
                     "set MASTER_ADDR, MASTER_PORT, RANK and WORLD_SIZE together, or launch with torchrun")
    bad = [k for k in ("MASTER_PORT", "RANK", "WORLD_SIZE") if not env[k].isdigit()]
    if bad:
        return Check("distributed", FAIL, f"not an integer: {', '.join(f'{k}={env[k]}' for k in bad)}",
                     "RANK, WORLD_SIZE and MASTER_PORT take integers")
    rank, world, port = int(env["RANK"]), int(env["WORLD_SIZE"]), int(env["MASTER_PORT"])
    if not (0 <= rank < world) or not (0 < port < 65536):
        return Check("distributed", FAIL, f"RANK={rank}, WORLD_SIZE={world}, MASTER_PORT={port}",
                     "RANK must be below WORLD_SIZE, MASTER_PORT between 1 and 65535")
    return Check("distributed", OK, f"rank {rank} of {world}, master {env['MASTER_ADDR']}:{port}, "
                                    f"backend {target.backend or 'per device'}")


def check_cpu(probe: Probe, target) -> list:
    rows = []
    governors = {(probe.read(p) or "").strip() for p in probe.glob(probe.governor_files)} - {""}
    if not governors:
        rows.append(Check("cpu governor", SKIP, "no cpufreq information (virtual machine or container)"))
    elif governors == {"performance"}:
        rows.append(Check("cpu governor", OK, "performance"))
    else:
        rows.append(Check("cpu governor", WARN, f"scaling governor: {', '.join(sorted(governors))}",
                          "for training, set the performance governor: cpupower frequency-set -g performance"))
    threads = probe.environ.get("OMP_NUM_THREADS")
    if threads is None:
        rows.append(Check("OMP_NUM_THREADS", WARN, f"not set ({probe.cpu_count} CPUs): every process starts one "
                          "thread per core, which oversubscribes with several processes per machine",
                          "export OMP_NUM_THREADS=<cores per process> (torchrun sets 1 unless you do)"))
    elif not threads.isdigit() or int(threads) < 1:
        rows.append(Check("OMP_NUM_THREADS", FAIL, f"OMP_NUM_THREADS={threads!r}", "a positive integer"))
    else:
        rows.append(Check("OMP_NUM_THREADS", OK, threads))
    return rows


def check_misconfigurations(probe: Probe, target) -> list:
    from ..backends import available_targets, load_target

    rows = []
    chosen = probe.environ.get("TORCHPORT_TARGET")
    if chosen and chosen != target.name:
        rows.append(Check("TORCHPORT_TARGET", WARN, f"TORCHPORT_TARGET={chosen} but checking {target.name}",
                          f"unset it or set it to {target.name}"))
    installed = [t for t in (load_target(n) for n in available_targets()) if t.register and probe.find(t.register)]
    if len(installed) > 1:
        rows.append(Check("vendor stacks", WARN, f"several installed: {', '.join(t.register for t in installed)}",
                          "keep one vendor stack per environment: they register the same PrivateUse1 backend"))
    return rows


def run_checks(target, probe: Optional[Probe] = None) -> list:
    from . import stack  # the vendor stack's versions, device nodes, shadowing modules

    probe = probe or Probe()
    rows = [check_python(probe, target), check_torch(probe, target), check_vendor(probe, target)]
    rows += stack.check_toolkit(probe, target) + stack.check_driver(probe, target)
    rows += stack.check_devices(probe, target) + stack.check_shadowing(probe, target)
    rows += check_visibility(probe, target) + check_required_env(probe, target)
    rows.append(check_tool(probe, target))
    rows.append(check_distributed(probe, target))
    rows += check_cpu(probe, target) + check_misconfigurations(probe, target)
    return rows
