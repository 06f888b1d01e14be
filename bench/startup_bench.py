"""Start-up cost of the torchport command line, printed as CPU seconds and as ratios in one run.

Each command runs as a whole process (`python -m torchport ...`, no .pyc writes); the figure is the
smallest user+sys CPU time of --repeat runs (the least disturbed one), next to a bare interpreter's.
Targets (issue 33): `--version` and `targets` at most 4x a bare interpreter's CPU time, printed as a ratio (issue 16's
0.06 s is kept beside it).  `--compare SRC` runs the same commands from
another checkout's `src/` folder (an older commit, say) in the same run, for a before/after table.
Also prints the torchport modules each command imports.
"""
from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1] / "src"
COMMANDS = (["--version"], ["targets"], ["rules"], ["convert", "--help"], ["run", "--help"])
TARGET_SECONDS = {"--version": 0.06, "targets": 0.06}
TARGET_RATIO = 4.0   # of a bare interpreter, for the same two commands


def cpu(argv: list, src: Path, repeat: int) -> float:
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    best = float("inf")
    for _ in range(repeat):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        best = min(best, after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
    return best


def imported(args: list, src: Path) -> int:
    """How many torchport modules the command imports."""
    probe = ("import runpy, sys\nsys.argv = ['torchport', *sys.argv[1:]]\n"
             "try:\n    runpy.run_module('torchport', run_name='__main__')\nexcept SystemExit:\n    pass\n"
             "print(sum(1 for m in sys.modules if m == 'torchport' or m.startswith('torchport.')), file=sys.stderr)\n")
    out = subprocess.run([sys.executable, "-c", probe, *args], env={**os.environ, "PYTHONPATH": str(src)},
                         capture_output=True, text=True, check=False)
    lines = out.stderr.strip().splitlines()
    return int(lines[-1]) if lines and lines[-1].isdigit() else -1


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=15)
    ap.add_argument("--compare", type=Path, help="another checkout's src/ folder (before)")
    args = ap.parse_args()
    for src in [args.compare, HERE] if args.compare else [HERE]:
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(src / "torchport")], check=False,
                       stdout=subprocess.DEVNULL)  # compiled once, as an installed package is
    bare = cpu([sys.executable, "-c", "pass"], HERE, args.repeat)
    print(f"bare interpreter: {bare:.3f} s CPU")
    head = f"{'command':22} {'now s':>7} {'modules':>8}"
    if args.compare:
        head += f" {'before s':>9} {'modules':>8} {'now/before':>11}"
    print(head + f" {'x bare':>7} {'target':>7}")
    failed = False
    for command in COMMANDS:
        argv = [sys.executable, "-m", "torchport", *command]
        now = cpu(argv, HERE, args.repeat)
        line = f"{' '.join(command):22} {now:7.3f} {imported(command, HERE):8}"
        if args.compare:
            before = cpu(argv, args.compare, args.repeat)
            line += f" {before:9.3f} {imported(command, args.compare):8} {now / before:11.2f}"
        line += f" {now / bare:7.1f}"
        goal = TARGET_SECONDS.get(command[0])
        if goal is not None:
            ok = now <= goal and now <= TARGET_RATIO * bare
            failed |= not ok
            line += f" {'<=' if ok else '>'}{TARGET_RATIO:g}x,{goal:.2f}s"
        print(line)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
