"""Speed of `torchport convert`, printed as ratios from one run.

1. transformers 4.46.3 sdist: wall time of the `torchport convert` process (default
   jobs) against plain `ast.parse` of the same .py files in one process.  Target: <= 1.0.
2. the same tree through `torchport analyze` for all seven targets.  Target: no slower than convert.
3. yolox 0.3.0 (~8k lines): end-to-end wall time including process start.  Target: <= 0.25 s.

Each figure is the median of --repeat runs.  Needs the network once (PyPI sdists, cached).
"""
from __future__ import annotations

import argparse
import ast
import compileall
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from pypi_cache import python_files, sdist  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from torchport.backends import available_targets  # noqa: E402

TORCHPORT = [sys.executable, "-m", "torchport"]


def parse_time(files) -> float:
    sources = [p.read_bytes() for p in files]
    start = time.perf_counter()
    for src in sources:
        try:
            ast.parse(src)
        except SyntaxError:
            pass
    return time.perf_counter() - start


def command_time(command: str, src: Path, target: str, repeat: int) -> list:
    times = []
    for _ in range(repeat):
        out = Path(tempfile.mkdtemp(prefix="tp-bench-")) / "out"
        start = time.perf_counter()
        subprocess.run([*TORCHPORT, command, str(src), "--to", target, "-o", str(out)],
                       check=True, stdout=subprocess.DEVNULL)
        times.append(time.perf_counter() - start)
        shutil.rmtree(out.parent)
    return times


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--target", default="npu")
    args = ap.parse_args()
    # Byte-compile torchport first, as `pip install` does: an editable checkout under
    # PYTHONDONTWRITEBYTECODE would otherwise recompile every module on every start.
    compileall.compile_dir(str(Path(__file__).resolve().parents[1] / "src" / "torchport"), quiet=1)
    tf = sdist("transformers", "4.46.3")
    files = python_files(tf)
    lines = sum(p.read_bytes().count(b"\n") for p in files)
    parse = statistics.median(parse_time(files) for _ in range(args.repeat))
    conv = statistics.median(command_time("convert", tf, args.target, args.repeat))
    every = ",".join(available_targets())
    analysis = statistics.median(command_time("analyze", tf, every, args.repeat))
    yolox = sdist("yolox", "0.3.0")
    ylines = sum(p.read_bytes().count(b"\n") for p in python_files(yolox))
    y = statistics.median(command_time("convert", yolox, args.target, args.repeat * 2))
    print(f"cpus: {len(os.sched_getaffinity(0))}, python {sys.version.split()[0]}, target {args.target}, "
          f"median of {args.repeat}")
    print(f"transformers 4.46.3: {len(files)} files, {lines} lines")
    print(f"  torchport convert (process, default jobs): {conv:.2f} s")
    print(f"  ast.parse, one process:                    {parse:.2f} s")
    print(f"  ratio convert / parse:                     {conv / parse:.2f}   (target <= 1.0)")
    print(f"  torchport analyze, all 7 targets:          {analysis:.2f} s")
    print(f"  ratio analyze / convert:                   {analysis / conv:.2f}   (target <= 1.0)")
    print(f"yolox 0.3.0: {len(python_files(yolox))} files, {ylines} lines")
    print(f"  torchport convert end to end:              {y:.3f} s   (target <= 0.25 s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
