"""Proof by execution on real projects: converted timm, yolox and ultralytics train on the simulated
npu/mlu/musa devices.

For each project (PyPI sdist, downloaded once into .corpus-cache/ by pypi_cache), `torchport convert`
writes a cpu tree and one per vendor target.  A driver (bench/corpus_sim/<project>_driver.py) builds
models with the project's own code, trains a few steps on synthetic data, evaluates the EMA model
(running statistics) and uses the project's device helpers; it runs on the cpu tree directly and on
each vendor tree under `torchport sim`.  Each vendor run must train on its device with the cpu run's
losses and evaluation (the simulator's numerics are the CPU's); where the driver asks the project's own
device helper (ultralytics' select_device), the vendor tree must pick the vendor device and the cpu tree
the CPU.  timm's distributed path (init_distributed_device, DDP, reduce_tensor) and ultralytics'
(BaseTrainer._setup_ddp, DDP) also run with 2 processes under torchrun on each target with its backend
(hccl, cncl, mccl), against the cpu tree with gloo; yolox's runs under its own launcher
(yolox.core.launch, mp.spawn, its Trainer's device and DDP), against the cpu tree's single process.  PyPI's torchvision builds do not load their C ops against this
machine's CPU torch: yolox gets bench/corpus_sim/shims/ (nms and friends in plain torch), timm and
ultralytics the real package with the two op schemas it needs defined (harness only).  Exit 1 on any
failure.

    python bench/corpus_sim.py [--projects timm yolox ultralytics] [--targets npu mlu musa]
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))
from pypi_cache import sdist  # noqa: E402

import torchport  # noqa: E402

PROJECTS = {"timm": "1.0.31", "yolox": "0.3.0", "ultralytics": "8.4.190"}
TARGETS = ("npu", "mlu", "musa")
SHIMS = HERE / "corpus_sim" / "shims"
# mlu's only operator list is for torch 2.4.1; torch 2.13's scaled_dot_product_attention decomposition
# calls aten::isneginf.out, which that list does not name (the simulator says so).  mlu runs with
# --cpu-fallback, and the ops that ran on the CPU are printed with the result.
SIM_OPTIONS = {"mlu": ["--cpu-fallback"]}
# projects whose distributed path runs with 2 processes on every target, and who starts them: torchrun
# (compared with the cpu tree's 2 processes on gloo), or the project's own launcher (yolox.core.launch,
# mp.spawn: every rank trains on the same batch, so it is compared with the cpu tree's single process;
# yolox's launcher asserts torch.cuda.is_available(), which a cpu tree cannot satisfy)
DISTRIBUTED = {"timm": "torchrun", "ultralytics": "torchrun", "yolox": "own"}
BACKEND = {"npu": "hccl", "mlu": "cncl", "musa": "mccl"}
# PyTorch's exit race (see tests/conftest.py, docs/sim.md): a run that dies of it runs once more
EXIT_RACE = "terminate called without an active exception"


def run_driver(project: str, tree: Path, target: str, distributed: bool = False) -> tuple:
    """(result dict or None, seconds, error text) of the project's driver on `tree`; `distributed`: with 2
    processes, started as DISTRIBUTED says."""
    driver = HERE / "corpus_sim" / f"{project}_driver.py"
    command = [sys.executable, str(driver)]
    if distributed and DISTRIBUTED[project] == "torchrun":
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(driver)]
    report = tree.with_name(f"{tree.name}_sim.json")
    if target != "cpu":
        command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--devices", "2" if distributed else "1",
                   "--report", str(report), *SIM_OPTIONS.get(target, []), "--", *command]
    env = {**os.environ, "TREE": str(tree), "DEV": target, "SHIMS": str(SHIMS), "OMP_NUM_THREADS": "1",
           "PROCESSES": "2" if distributed else "1"}
    start = time.perf_counter()
    p = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    if p.returncode != 0 and EXIT_RACE in p.stderr:
        print(f"       ({project} {target} died of PyTorch's exit race; running it again)")
        p = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    took = time.perf_counter() - start
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if p.returncode != 0 or line is None:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-3:]
        return None, took, " | ".join(tail)
    result = json.loads(line[len("RESULT "):])
    if report.is_file():
        result["fallback_ops"] = [f"{e['op']} x{e['calls']}" for e in json.loads(report.read_text())["fallback_ops"]]
    return result, took, ""


def close(a, b, rel: float) -> bool:
    return math.isfinite(a) and math.isfinite(b) and abs(a - b) <= rel * max(1.0, abs(a), abs(b))


def compare(project: str, ref: dict, got: dict, target: str) -> list:
    """What differs between the cpu run and the target's run (empty when they agree)."""
    problems = []
    runs = got["models"].items() if "models" in got else [(project, got)]
    refs = ref["models"] if "models" in ref else {project: ref}
    for request, answer in got.get("selected", {}).items():
        wanted = "cpu" if request == "cpu" else target
        if not answer.startswith(wanted):
            problems.append(f"the project's device helper gave {answer!r} for {request!r}, not {wanted}")
    for request, answer in ref.get("selected", {}).items():
        if request in ("", "cpu") and answer != "cpu":
            problems.append(f"on the cpu tree the project's device helper gave {answer!r} for {request!r}")
    for name, r in runs:
        if not r["on"].startswith(target):
            problems.append(f"{name} trained on {r['on']}, not on {target}")
        if not all(close(a, b, 1e-4) for a, b in zip(r["losses"], refs[name]["losses"])):
            problems.append(f"{name} losses {r['losses']} vs cpu {refs[name]['losses']}")
        if r.get("detections") != refs[name].get("detections"):
            problems.append(f"{name} detections {r.get('detections')} vs cpu {refs[name].get('detections')}")
        if not close(r["ema_eval"], refs[name]["ema_eval"], 1e-3):
            problems.append(f"{name} EMA evaluation {r['ema_eval']:.5g} vs cpu {refs[name]['ema_eval']:.5g}")
    return problems


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--projects", nargs="+", default=list(PROJECTS))
    ap.add_argument("--targets", nargs="+", default=list(TARGETS))
    args = ap.parse_args()
    failures = 0
    with tempfile.TemporaryDirectory(prefix="torchport-corpus-sim-") as tmp:
        for project in args.projects:
            src = sdist(project, PROJECTS[project])
            trees = {}
            for target in ["cpu", *args.targets]:
                trees[target] = Path(tmp) / f"{project}_{target}"
                torchport.convert(src, target, trees[target])
            ref, took, err = run_driver(project, trees["cpu"], "cpu")
            if ref is None:
                print(f"FAIL {project} cpu: {err}")
                failures += 1
                continue
            print(f"ok   {project} cpu ({took:.0f} s)")
            for target in args.targets:
                got, took, err = run_driver(project, trees[target], target)
                problems = [err] if got is None else compare(project, ref, got, target)
                fell = f"; ran on the CPU: {', '.join(got['fallback_ops'])}" if got and got.get("fallback_ops") else ""
                print(f"{'FAIL' if problems else 'ok  '} {project} {target} ({took:.0f} s{fell})"
                      + "".join(f"\n       {p}" for p in problems))
                failures += bool(problems)
            how = DISTRIBUTED.get(project)
            dref, derr = ref, ""
            if how == "torchrun":
                dref, _, derr = run_driver(project, trees["cpu"], "cpu", distributed=True)
            for target in args.targets if how else ():
                dgot, took, err = run_driver(project, trees[target], target, distributed=True)
                problems = [e for e in (derr, err) if e]
                if not problems:
                    if dgot["world"] != 2 or not dgot["device"].startswith(target):
                        problems.append(f"distributed run on {dgot['device']} with world {dgot['world']}")
                    if dgot.get("backend", BACKEND[target]) != BACKEND[target]:
                        problems.append(f"process group on {dgot['backend']}, not {BACKEND[target]}")
                    for r in dgot.get("ranks", []):
                        if r["device"] != f"{target}:{r['rank']}" or r["losses"] != dgot["losses"]:
                            problems.append(f"rank {r['rank']} on {r['device']} with losses {r['losses']}")
                    problems += compare(project, dref, dgot, target)
                against = "gloo" if how == "torchrun" else "1 cpu process"
                print(f"{'FAIL' if problems else 'ok  '} {project} {target}, 2 processes, {how} launcher + "
                      f"{BACKEND[target]} vs {against} ({took:.0f} s)" + "".join(f"\n       {p}" for p in problems))
                failures += bool(problems)
    print(f"corpus_sim: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
