"""Real projects' own test suites on the simulated devices: the CI step docs/sim.md describes, measured.

For each project (PyPI sdist, downloaded once into .corpus-cache/ by pypi_cache; its test dependencies
pip-installed once into .corpus-cache/site-<project>, beside this interpreter's torch), `torchport convert`
writes a cpu tree and one per vendor target.  The project's tests (a bounded subset, PROJECTS) run with
pytest on the original and the cpu tree directly and on each vendor tree under `torchport sim`; each test's
outcome comes from pytest's JUnit XML.  A vendor run must pass every test the original or the cpu tree
passes, except those EXPLAINED
(each with its reason: a fidelity row or the project's own code); the tests it passes beyond the cpu run's
are counted (a suite's device half, which runs only where a device answers).  Exit 1 on any other
difference.  Needs the network once (sdists and test dependencies); not part of the test suite.

    python bench/project_tests_sim.py [--projects torchsde pytorch-wavelets] [--targets npu mlu musa] [--fetch]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import xml.etree.ElementTree as ET
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "src"))

from pypi_cache import CACHE, sdist  # noqa: E402

import torchport  # noqa: E402

TARGETS = ("npu", "mlu", "musa")
# name: (version, test dependencies pip installs (all of them: no dependency is resolved, so that none brings another
# torch; numpy and pytest come from this interpreter), the tests to run (paths in the sdist), pytest options)
PROJECTS = {
    # the suite calls pytest.skip(msg=...), gone in pytest 8
    "torchsde": ("0.2.6", ["boltons>=20.2.1", "trampoline>=0.1.2", "scipy>=1.5", "pytest<8"],
                 ["tests/test_brownian_interval.py", "tests/test_brownian_path.py", "tests/test_brownian_tree.py"], []),
    # it imports pkg_resources, its tests py3nvml and dtcwt, and use nose-style module setup(), gone in pytest 8
    "pytorch-wavelets": ("1.3.0", ["PyWavelets>=1.1", "setuptools<81", "dtcwt", "six", "py3nvml", "xmltodict",
                                   "pytest<8"], ["tests"], []),
    "torch-optimizer": ("0.3.0", ["pytorch_ranger>=0.1.1"], ["tests/test_basic.py", "tests/test_optimizer_with_nn.py",
                                                            "tests/test_param_validation.py"], []),
}
# (project, start of a test id) -> (the targets, why a vendor run there may not pass a test the CPU runs pass)
EXPLAINED: dict = {
    ("torchsde", "tests.test_brownian_interval::test_normality_conditional["): (
        ("npu", "mlu", "musa"),
        "the simulator's default RNG (host): device ops draw from the CPU generator, so the CPU tests after the "
        "device half see another stream, and this statistical test (kstest, alpha 1e-5, module-level seed) can "
        "fail; with --rng device (a generator per device, as on the hardware) the file passes 134 of 134"),
    **{("pytorch-wavelets", f"tests.{module}::test_equal_double["): (
        ("npu", "mlu", "musa"),
        "float64 convolutions on the device: refused by the 910B and the MTT S4000 (fidelity rows N-dt-conv-f64, "
        "U-dt-conv-f64), computed as float32 on the MLU (M-f64)") for module in ("test_dwt", "test_dwt1d")},
}


def site(project: str) -> Path:
    """The folder holding the project's test dependencies (installed once, without touching this venv)."""
    folder = CACHE / f"site-{project}"
    if not (folder / ".complete").exists():
        deps = PROJECTS[project][1]
        # --no-deps: a dependency that requires torch would bring another torch into the folder; list them all
        subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(folder), *deps],
                       check=True)
        (folder / ".complete").write_text("\n".join(deps))
    return folder


def run_tests(project: str, tree: Path, target: str, report: Path) -> tuple:
    """({test id: passed | failed | skipped}, seconds, error text) of the project's tests on `tree`."""
    _, _, tests, options = PROJECTS[project]
    xml = tree.with_name(f"{tree.name}.xml")
    xml.unlink(missing_ok=True)
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", f"--junitxml={xml}", *options, *tests]
    if target != "cpu":
        command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--report", str(report), "--", *command]
    env = {**os.environ, "OMP_NUM_THREADS": "1",
           "PYTHONPATH": os.pathsep.join(filter(None, [str(tree), str(site(project)), os.environ.get("PYTHONPATH")]))}
    start = time.perf_counter()
    p = subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=1800)
    took = time.perf_counter() - start
    if not xml.is_file():
        return {}, took, " | ".join((p.stdout + p.stderr).strip().splitlines()[-3:])
    return outcomes(xml), took, ""


def outcomes(xml: Path) -> dict:
    out = {}
    for case in ET.parse(xml).getroot().iter("testcase"):
        tags = {child.tag for child in case}
        state = "failed" if tags & {"failure", "error"} else "skipped" if "skipped" in tags else "passed"
        test = f"{case.get('classname')}::{case.get('name')}"
        out[test] = state
        failure = next((c for c in case if c.tag in ("failure", "error")), None)
        if failure is not None:
            messages[test] = (failure.get("message") or "").splitlines()[0][:160] if failure.get("message") else ""
    return out


messages: dict = {}   # test id -> the first line of its last failure message (shown for a test a vendor run lost)


def explained(project: str, target: str, test: str) -> str:
    return next((why for (p, start), (targets, why) in EXPLAINED.items()
                 if p == project and target in targets and test.startswith(start)), "")


def compare(project: str, target: str, references: list, got: dict) -> tuple:
    """(unexplained tests the vendor run does not pass, explained ones, tests only the vendor run passes): the
    references are the original's and the cpu tree's outcomes; a test either passes is one the vendor run must pass."""
    passed = {t for ref in references for t, s in ref.items() if s == "passed"}
    lost = sorted(t for t in passed if got.get(t) != "passed")
    gained = sorted(t for t, s in got.items() if s == "passed" and t not in passed)
    return ([t for t in lost if not explained(project, target, t)], [t for t in lost if explained(project, target, t)],
            gained)


def counts(result: dict) -> str:
    states = list(result.values())
    return ", ".join(f"{states.count(s)} {s}" for s in ("passed", "failed", "skipped") if states.count(s))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--projects", nargs="+", default=list(PROJECTS), choices=list(PROJECTS))
    ap.add_argument("--targets", nargs="+", default=list(TARGETS), choices=TARGETS)
    ap.add_argument("--fetch", action="store_true", help="only download the projects and their test dependencies")
    args = ap.parse_args()
    for project in args.projects:
        sdist(project, PROJECTS[project][0])
        site(project)
    if args.fetch:
        return 0
    failures = 0
    rows = []
    with tempfile.TemporaryDirectory(prefix="torchport-project-tests-") as tmp:
        for project in args.projects:
            src = sdist(project, PROJECTS[project][0])
            trees = {t: Path(tmp) / f"{project}_{t}" for t in ["original", "cpu", *args.targets]}
            shutil.copytree(src, trees["original"], symlinks=True)
            for target, tree in trees.items():
                if target != "original":
                    torchport.convert(src, target, tree)
            refs = {}
            for name in ("original", "cpu"):   # both on the CPU, without the simulator
                refs[name], took, err = run_tests(project, trees[name], "cpu", Path(tmp) / "cpu.json")
                print(f"{'ok  ' if refs[name] else 'FAIL'} {project} {name}: {counts(refs[name]) or err} ({took:.0f} s)")
                rows.append((project, name, counts(refs[name]), "", ""))
            if not any(state == "passed" for ref in refs.values() for state in ref.values()):   # nothing to compare with
                print(f"FAIL {project}: no test passed on the CPU")
                failures += 1
                continue
            for target in args.targets:
                got, took, err = run_tests(project, trees[target], target, Path(tmp) / f"{project}_{target}_sim.json")
                lost, kept, gained = compare(project, target, list(refs.values()), got) if got else ([err or "no tests ran"], [], [])
                print(f"{'FAIL' if lost else 'ok  '} {project} {target}: {counts(got)}; {len(gained)} passed only here, "
                      f"{len(kept)} explained ({took:.0f} s)"
                      + "".join(f"\n       not passed: {t}: {messages.get(t, '')}" for t in lost[:10]))
                rows.append((project, target, counts(got), str(len(gained)), str(len(lost))))
                failures += bool(lost)
    print("\n| project | tree | tests | passed only here | CPU passes not passed |\n|---|---|---|---|---|")
    for row in rows:
        print("| " + " | ".join(row) + " |")
    print(f"project_tests_sim: {failures} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
