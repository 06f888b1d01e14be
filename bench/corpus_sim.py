"""Proof by execution on real projects: migrated timm, yolox, ultralytics, pytorch-tabnet, stable-baselines3
and ctgan train on the simulated npu/mlu/musa devices.

For each project (PyPI sdist, downloaded once into .corpus-cache/ by pypi_cache), `torchport migrate`
writes a cpu tree and one per vendor target, each with its "What's left".  A driver (bench/corpus_sim/<project>_driver.py) builds
models with the project's own code, trains a few steps on synthetic data, evaluates the EMA model
(running statistics) and uses the project's device helpers; it runs on the cpu tree directly and on
each vendor tree under `torchport sim`.  Each vendor run must train on its device with the cpu run's
losses and evaluation (the simulator's numerics are the CPU's); where the driver asks the project's own
device helper (ultralytics' select_device), the vendor tree must pick the vendor device and the cpu tree
the CPU.  timm's distributed path (init_distributed_device, DDP, reduce_tensor) and ultralytics'
(BaseTrainer._setup_ddp, DDP) also run with 2 processes under torchrun on each target with its backend
(hccl, cncl, mccl), against the cpu tree with gloo; yolox's (yolox.core.launch: mp.spawn, its Trainer's
device and DDP) and ultralytics' (train(device="0,1") starting its own DDP command) run under the
project's own launcher (see DISTRIBUTED).  pytorch-tabnet (define_device("auto"), its fit loop with
pin_memory), stable-baselines3 (get_device("auto"), PPO/A2C/DQN, save/load) and ctgan (enable_gpu=True and
the deprecated cuda=True, save/load) were added as projects this repository had never used (issue 30).
A run that fails is read back (torchport.commands.migrate.trace): the migrated lines its traceback went through, and
the origins of the names they read; when "What's left" names none of them the failure is silent, and the
silent failures are counted per project and target (the target is 0).  PyPI's torchvision builds do not load their C ops against this
machine's CPU torch: yolox gets bench/corpus_sim/shims/ (nms and friends in plain torch), timm and
ultralytics the real package with the harness in corpus_sim/site/sitecustomize.py (in every process).
Exit 1 on any failure.

    python bench/corpus_sim.py [--projects timm yolox ultralytics] [--targets npu mlu musa] [--fetch]
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

from torchport.api import migrate  # noqa: E402

PROJECTS = {"timm": "1.0.31", "yolox": "0.3.0", "ultralytics": "8.4.190", "pytorch-tabnet": "4.1.0",
            "stable-baselines3": "2.9.2", "ctgan": "0.12.1"}
TARGETS = ("npu", "mlu", "musa")
SHIMS = HERE / "corpus_sim" / "shims"
# Options per target.  None now: an op a target lacks does what the hardware does (npu and mlu run it on
# the CPU with the vendor's warning, counted in the report and printed with the result; musa raises), and
# mlu's scaled_dot_product_attention runs whole (torch_mlu registers it) instead of torch 2.13's
# decomposition, which called aten::isneginf.out that mlu's torch 2.4.1 list does not name.
SIM_OPTIONS: dict = {}
# The vendor's own switches a project needs on a target, with why (each is what a user sets on the hardware).
# ultralytics on mlu: its TaskAlignedAssigner scatter_adds int8 counts, which torch_mlu r2.4 refuses ("MLU
# scatter_add" not implemented for 'Char', fidelity row M-failfb-off); ENABLE_MLU_FAIL_FALLBACK=1 runs it on
# the CPU with the vendor's warning (M-failfb-on), and the run lists it among the ops that ran on the CPU.
VENDOR_SWITCHES = {("ultralytics", "mlu"): {"ENABLE_MLU_FAIL_FALLBACK": "1"}}
# projects whose distributed paths run with 2 processes on every target, and who starts them:
# "torchrun" (compared with the cpu tree's 2 processes on gloo), or "own", the project's own launcher.
# yolox.core.launch (mp.spawn) trains every rank on the same batch, so it is compared with the cpu tree's
# single process (the launcher asserts torch.cuda.is_available(), which a cpu tree cannot satisfy);
# ultralytics' train(device="0,1") writes its DDP script and runs torchrun, which a cpu tree cannot ask
# for, so its targets are compared with each other.  Every distributed run must have used device 0 and
# device 1 from different processes (the simulator's report).
DISTRIBUTED = {"timm": ["torchrun"], "ultralytics": ["torchrun", "own"], "yolox": ["own"]}
OWN_REFERENCE = {"yolox": "cpu", "ultralytics": "targets"}
# projects that import the real torchvision get the harness in corpus_sim/site/sitecustomize.py
REAL_TORCHVISION = {"timm", "ultralytics"}
BACKEND = {"npu": "hccl", "mlu": "cncl", "musa": "mccl"}
FAILED_OUTPUT: dict = {}   # (tree, launcher) -> the stderr of a run that failed, read back by silent()
# PyTorch's exit race (see tests/conftest.py, docs/sim.md): a run that dies of it runs again, at most 3 times
EXIT_RACE = "terminate called without an active exception"


def run_driver(project: str, tree: Path, target: str, launcher: str = "") -> tuple:
    """(result dict or None, seconds, error text) of the project's driver on `tree`; with a `launcher`
    (see DISTRIBUTED), in 2 processes."""
    driver = HERE / "corpus_sim" / f"{project}_driver.py"
    command = [sys.executable, str(driver)]
    if launcher == "torchrun":
        command = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(driver)]
    report = tree.with_name(f"{tree.name}_sim.json")
    report.unlink(missing_ok=True)
    if target != "cpu":
        command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--devices", "2" if launcher else "1",
                   "--report", str(report), *SIM_OPTIONS.get(target, []), "--", *command]
    env = {**os.environ, **VENDOR_SWITCHES.get((project, target), {}),
           "TREE": str(tree), "DEV": target, "SHIMS": str(SHIMS), "OMP_NUM_THREADS": "1",
           "PROCESSES": "2" if launcher == "own" else "1"}
    if project in REAL_TORCHVISION:   # in every process the driver's processes start, too
        path = os.pathsep.join([str(tree), str(HERE / "corpus_sim" / "site"), os.environ.get("PYTHONPATH", "")])
        env.update(PYTHONPATH=path.rstrip(os.pathsep), CORPUS_SIM_HARNESS="torchvision")
    start = time.perf_counter()
    p = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    for _ in range(3):   # the race grows with the machine's load (CI runs this beside bench/corpus.py)
        if p.returncode == 0 or EXIT_RACE not in p.stderr:
            break
        print(f"       ({project} {target} died of PyTorch's exit race; running it again)")
        p = subprocess.run(command, env=env, capture_output=True, text=True, timeout=1200)
    took = time.perf_counter() - start
    line = next((x for x in p.stdout.splitlines() if x.startswith("RESULT ")), None)
    if p.returncode != 0 or line is None:
        tail = (p.stderr.strip().splitlines() or ["(no output)"])[-3:]
        FAILED_OUTPUT[(str(tree), launcher)] = p.stderr
        return None, took, " | ".join(tail)
    result = json.loads(line[len("RESULT "):])
    if report.is_file():
        merged = json.loads(report.read_text())
        result["fallback_ops"] = [f"{e['op']} x{e['calls']}" for e in merged["fallback_ops"]]
        used = {d for peaks in merged["peak_memory"].values() for d, peak in peaks.items() if peak}
        result["processes_on_device"] = {d: sum(1 for peaks in merged["peak_memory"].values() if peaks.get(d))
                                         for d in sorted(used)}
    return result, took, ""


def silent(tree: Path, launcher: str, items: list) -> str:
    """For a failed run: "" when What's left names a line its traceback went through (or the origin of a name
    such a line reads), "silent: <where>" when it names none, "outside the tree" when no frame is in it."""
    from torchport.commands.migrate.trace import lines_through

    output = FAILED_OUTPUT.get((str(tree), launcher), "")
    through = lines_through(output, tree)
    if not through:
        return "outside the tree" if output else ""
    named = {(i.file, i.line) for i in items}
    if any((ln.file, ln.line) in named for ln in through):
        return ""
    return "silent: " + ", ".join(ln.where for ln in through[:3])


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


def distributed_runs(project: str, launcher: str, trees: dict, ref: dict, targets: list, left: dict) -> tuple:
    """Run the project's distributed path with `launcher` on each target; print and count the failures and the
    silent ones."""
    failures, quiet, first = 0, 0, None
    against = {"torchrun": "cpu, 2 processes on gloo", "own": "cpu, 1 process"}[launcher]
    dref, derr = ref, ""
    if launcher == "torchrun":
        dref, _, derr = run_driver(project, trees["cpu"], "cpu", launcher)
    for target in targets:
        got, took, err = run_driver(project, trees[target], target, launcher)
        problems = [e for e in (derr, err) if e]
        if not problems:
            if got["world"] != 2 or not got["device"].startswith(target):
                problems.append(f"distributed run on {got['device']} with world {got['world']}")
            if got.get("backend", BACKEND[target]) != BACKEND[target]:
                problems.append(f"process group on {got['backend']}, not {BACKEND[target]}")
            if got.get("processes_on_device") != {"0": 1, "1": 1}:
                problems.append(f"processes per simulated device: {got.get('processes_on_device')}, not one on each")
            for r in got.get("ranks", []):
                if r["device"] != f"{target}:{r['rank']}" or r["losses"] != got["losses"]:
                    problems.append(f"rank {r['rank']} on {r['device']} with losses {r['losses']}")
            if launcher == "own" and OWN_REFERENCE[project] == "targets":
                first = first or (target, got)
                against = f"{first[0]}, 2 processes"
                if not all(close(a, b, 1e-4) for a, b in zip(got["losses"], first[1]["losses"])):
                    problems.append(f"losses {got['losses']} vs {first[0]} {first[1]['losses']}")
            else:
                problems += compare(project, dref, got, target)
        said = silent(trees[target], launcher, left[target]) if err else ""
        print(f"{'FAIL' if problems else 'ok  '} {project} {target}, 2 processes, {launcher} launcher + "
              f"{BACKEND[target]} vs {against} ({took:.0f} s)" + "".join(f"\n       {p}" for p in problems)
              + (f"\n       {said}" if said else ""))
        failures += bool(problems)
        quiet += said.startswith("silent")
    return failures, quiet


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--projects", nargs="+", default=list(PROJECTS))
    ap.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS,
                    help="the simulated targets (the cpu tree, their reference, is always made)")
    ap.add_argument("--fetch", action="store_true", help="only download the projects into .corpus-cache/")
    args = ap.parse_args()
    if args.fetch:
        for project in args.projects:
            sdist(project, PROJECTS[project])
        return 0
    failures, quiet = 0, 0
    with tempfile.TemporaryDirectory(prefix="torchport-corpus-sim-") as tmp:
        for project in args.projects:
            src = sdist(project, PROJECTS[project])
            trees, left = {}, {}
            for target in ["cpu", *args.targets]:
                trees[target] = Path(tmp) / f"{project}_{target}"
                left[target] = migrate(src, target, trees[target], jobs=1).items
            ref, took, err = run_driver(project, trees["cpu"], "cpu")
            if ref is None:
                said = silent(trees["cpu"], "", left["cpu"])
                print(f"FAIL {project} cpu: {err}" + (f"\n       {said}" if said else ""))
                failures += 1
                quiet += said.startswith("silent")
                continue
            print(f"ok   {project} cpu ({took:.0f} s)")
            for target in args.targets:
                got, took, err = run_driver(project, trees[target], target)
                problems = [err] if got is None else compare(project, ref, got, target)
                said = silent(trees[target], "", left[target]) if got is None else ""
                fell = f"; ran on the CPU: {', '.join(got['fallback_ops'])}" if got and got.get("fallback_ops") else ""
                print(f"{'FAIL' if problems else 'ok  '} {project} {target} ({took:.0f} s{fell})"
                      + "".join(f"\n       {p}" for p in problems) + (f"\n       {said}" if said else ""))
                failures += bool(problems)
                quiet += said.startswith("silent")
            for launcher in DISTRIBUTED.get(project, []):
                n, k = distributed_runs(project, launcher, trees, ref, args.targets, left)
                failures, quiet = failures + n, quiet + k
    print(f"corpus_sim: {failures} failure(s), {quiet} silent (a failing run whose traceback's lines What's left "
          "does not name)")
    return 1 if failures or quiet else 0


if __name__ == "__main__":
    sys.exit(main())
