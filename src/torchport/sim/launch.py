"""`torchport sim`: run a command with the simulated device, and merge what its processes report.

The command runs as a child process whose environment puts the simulated vendor's stand-in package
(packages/<target>/) first on PYTHONPATH and says what to simulate (TORCHPORT_SIM_*), so every Python
process it starts (torchrun's workers included) imports our `torch_npu` / `torch_mlu` /
`torch_musa` and simulates the same device.  Each process writes a report at exit into a temporary
folder; they are merged into `--report FILE` and summed up in one line on stderr.
This module imports no torch: the child does.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Optional

from ..core import files, writes
from ..core.command import interpreter_words
from ..core.errors import UsageError
from ..core.words import counted
from . import ENV, RNG_MODES, package_path, simulated_targets


def environment(target: str, *, devices: int = 1, cpu_fallback: bool = False, strict_ops: bool = False,
                rng: str = "host", torch_version: Optional[str] = None, report_dir: Optional[str] = None,
                chip: Optional[str] = None) -> dict:
    """The environment variables that make a process (and its children) simulate `target`."""
    if target not in simulated_targets():
        from ..backends import load_target

        t = load_target(target)   # an unknown name fails here with the list of targets
        raise UsageError(f"'{t.name}' has no simulated device (simulated targets: {', '.join(simulated_targets())})"
                         + ("; it runs here as it is" if t.kind != "vendor" else ""))
    if not 1 <= devices <= 16:
        raise UsageError(f"--devices must be between 1 and 16 (got {devices})")
    if rng not in RNG_MODES:
        raise UsageError(f"--rng must be one of {', '.join(RNG_MODES)}")
    strict_ops = strict_ops or os.environ.get(ENV["strict_ops"], "").lower() in ("1", "true", "yes")
    if cpu_fallback and strict_ops:
        raise UsageError("--strict-ops and --cpu-fallback contradict each other: give one")
    path = os.environ.get("PYTHONPATH", "")
    env = {"PYTHONPATH": os.pathsep.join(package_path(target) + ([path] if path else [])), ENV["target"]: target,
           ENV["devices"]: str(devices), ENV["cpu_fallback"]: "1" if cpu_fallback else "0",
           ENV["strict_ops"]: "1" if strict_ops else "0", ENV["rng"]: rng}
    if torch_version:
        env[ENV["torch_version"]] = torch_version
    if os.environ.get("TORCHPORT_CACHE"):   # a relative one means this folder, wherever the command's processes run
        env["TORCHPORT_CACHE"] = os.path.abspath(os.environ["TORCHPORT_CACHE"])
    if chip:
        from .chips import device

        env[ENV["chip"]] = device(target, chip).name   # an unknown name fails here, with the chips there are
    if report_dir:
        env[ENV["report"]] = report_dir
    # Backward on a simulated device runs on autograd's device thread; when its CPU kernels used an
    # OpenMP team, the process aborted at exit now and then ("terminate called without an active
    # exception": 3 of 12 runs of tests/fixtures/sim/lacking_ops.py with 2 threads, 0 of 20 with one).
    # Timing is not the device's anyway; a user's own setting wins.
    env["OMP_NUM_THREADS"] = os.environ.get("OMP_NUM_THREADS", "1")
    return env


def resolve_command(argv: list) -> list:
    """The command to start.  Python found on PATH (`python`, `python3.11`, `/usr/bin/env python3`)
    means the interpreter running torchport, the one that has torch; an interpreter given by its path
    is kept (the stand-in packages find torchport even there); other programs are kept as given."""
    if not argv:
        raise UsageError("sim needs a command after --: torchport sim --to npu -- python train.py")
    words = interpreter_words(argv)
    if words:
        at = 1 if Path(argv[0]).name == "env" else 0          # where the interpreter's name is
        if at or "/" not in argv[0]:
            return [sys.executable, *argv[at + 1:]]
        return list(argv)
    if shutil.which(argv[0]) is None and not Path(argv[0]).is_file():
        raise UsageError(f"command not found: {argv[0]}")
    return list(argv)


@dataclass(frozen=True)
class SimOptions:
    """How a simulated device behaves (`torchport sim`'s options; see environment())."""

    devices: int = 1
    cpu_fallback: bool = False
    strict_ops: bool = False
    rng: str = "host"
    torch_version: Optional[str] = None
    chip: Optional[str] = None


def run(target: str, argv: list, options: SimOptions = SimOptions(), report: Optional[str] = None) -> int:
    """Run `argv` with the simulated `target`; its exit code.  Prints one summary line on stderr; `report`: a
    file for the run's report."""
    command = resolve_command(argv)
    env = environment(target, devices=options.devices, cpu_fallback=options.cpu_fallback,
                      strict_ops=options.strict_ops, rng=options.rng, torch_version=options.torch_version,
                      chip=options.chip)   # checks the options before anything starts
    files.check_report_path(report, argv)
    folder = tempfile.mkdtemp(prefix="torchport-sim-")
    try:
        env = {**os.environ, **env, ENV["report"]: folder}
        try:
            code = subprocess.call(command, env=env)
        except OSError as e:
            raise UsageError(f"cannot start {command[0]}: {e.strerror}") from None
        merged = merge(folder)
        merged["exit_code"], merged["requested"] = code, target
        print(summary(merged), file=sys.stderr)
        if report:
            write(merged, Path(report))
        return code
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def merge(folder: str) -> dict:
    """All processes' reports in one: fallback ops summed, memory peaks per process."""
    reports = []
    for f in sorted(Path(folder).glob("sim-*.json")):
        try:
            reports.append(json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    ops: dict = {}
    for r in reports:
        for e in r.get("fallback_ops", []):
            entry = ops.setdefault(e["op"], {"op": e["op"], "calls": 0, "modules": []})
            entry["calls"] += e["calls"]
            entry["modules"] += [m for m in e["modules"] if m not in entry["modules"]]
    errors = []
    for f in sorted(Path(folder).glob("failed-*.json")):
        try:
            errors.append(str(json.loads(f.read_text(encoding="utf-8")).get("error", "")))
        except (OSError, ValueError, AttributeError):
            continue
    first = reports[0] if reports else {}
    return {"schema": 1, "simulated": True, "target": first.get("target"), "device": first.get("device"),
            "processes": len(reports), "cpu_fallback": first.get("cpu_fallback"), "fallback": first.get("fallback"),
            "op_list": first.get("op_list"), "autocast": first.get("autocast"),
            "fallback_ops": sorted(ops.values(), key=lambda e: (-e["calls"], e["op"])),
            "peak_memory": {f"rank {r.get('rank') or 0} pid {r.get('pid')}":
                            {d: m["peak"] for d, m in r.get("memory", {}).items()} for r in reports},
            "errors": sorted(set(e for e in errors if e)),
            "note": "simulated device: numerics are the CPU's, performance is not the device's"}


def _signal_name(number: int) -> str:
    import signal

    try:
        return signal.Signals(number).name
    except ValueError:
        return f"signal {number}"


def summary(merged: dict) -> str:
    ol = merged.get("op_list") or {}
    version = f", op list {ol.get('vendor_version')} for torch {ol.get('torch_version')}" if ol else ""
    threads = os.environ.get("OMP_NUM_THREADS", "1")   # what environment() gave the program (results' last bits)
    on = f" on {threads} CPU thread{'' if threads == '1' else 's'}" if merged["processes"] else ""
    line = (f"torchport sim: simulated {merged.get('device') or merged.get('requested') or '?'} ({merged['processes']} process"
            f"{'es' if merged['processes'] != 1 else ''}{on}{version}), exit {merged.get('exit_code')}")
    ops = merged["fallback_ops"]
    code = merged.get("exit_code")
    package = f"torch_{merged.get('device') or merged.get('requested') or 'npu'}"
    if merged["processes"] == 0 and merged.get("errors"):
        line += f"; the simulated device could not start: {merged['errors'][0]}"
    elif merged["processes"] == 0 and isinstance(code, int) and code < 0:
        name = _signal_name(-code)
        line += (f"; killed by {name}, so no process wrote its report: a crash (of the program, a library or the "
                 "simulator), not a missing device; `python -X faulthandler` shows where")
    elif merged["processes"] == 0 and code:
        line += (f"; no process reported the simulated device: the program failed before it imported {package} "
                 f"(its error is above). A converted program imports it; an unconverted one runs with `torchport run "
                 f"--simulate`; an interpreter without torch needs torch==2.13.0")
    elif merged["processes"] == 0:
        line += "; no process started the simulated device (did the program import the vendor package?)"
    elif ops:
        shown = ", ".join(f"{e['op']} x{e['calls']}" for e in ops[:5])
        line += f"; {counted(len(ops), 'op')} the target lacks ran on the CPU: {shown}{' ...' if len(ops) > 5 else ''}"
    return line


def write(merged: dict, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".md":
        rows = [f"| `{e['op']}` | {e['calls']} | {', '.join(e['modules'][:5])} |" for e in merged["fallback_ops"]]
        text = "\n".join([f"# torchport sim: {merged.get('target')} (simulated)", "", merged["note"] + ".", "",
                          summary(merged), "", "| op the target lacks (ran on the CPU) | calls | modules |",
                          "| --- | --- | --- |", *(rows or ["| (none) | | |"])]) + "\n"
    else:
        text = json.dumps(merged, indent=1) + "\n"
    writes.write_text(path, text)   # atomic, never through a link, a device node replaced (core/writes.py)


def build(verbose: bool = False) -> int:
    """`torchport sim --build`: build (or find) the extension for this torch; prints where and how long."""
    import time

    from . import build as builder

    start = time.perf_counter()
    builder.load(verbose=verbose)
    info = builder.build_info()
    took = time.perf_counter() - start
    print(f"torchport sim: extension for torch {info.get('torch')} ready in {took:.1f} s "
          f"(first build took {info.get('seconds')} s) at {builder.build_dir(info.get('torch', ''))}", file=sys.stderr)
    return 0
