"""`torchport port-ext --to hip` against PyTorch's own `torch.utils.hipify`, side by side in one run.

Tree: the ATen headers shipped in the torch wheel (torch/include/ATen, ~7,800 files), copied
to a scratch folder.  Both tools run as fresh processes and write a ported copy; the
figures are wall times including process start (median of --repeat).  Target: torchport
at least 3x faster.  Needs the venv with torch==2.13.0 (for hipify and the headers).
"""
from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HIPIFY = """
import sys
from torch.utils.hipify import hipify_python
hipify_python.hipify(project_directory=sys.argv[1], output_directory=sys.argv[2], includes=["*"],
                     show_progress=False, is_pytorch_extension=True)
"""


def timed(cmd) -> float:
    start = time.perf_counter()
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - start


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    import importlib.metadata
    import importlib.util

    spec = importlib.util.find_spec("torch")  # found, not imported
    if spec is None or spec.origin is None:
        print("port_bench: needs torch==2.13.0 in this environment (pip install -e '.[test]')", file=sys.stderr)
        return 2
    aten = Path(spec.origin).parent / "include" / "ATen"
    version = importlib.metadata.version("torch")
    work = Path(tempfile.mkdtemp(prefix="tp-port-bench-"))
    try:
        src = work / "ATen"
        shutil.copytree(aten, src)
        files = sum(1 for p in src.rglob("*") if p.is_file())
        ours, theirs = [], []
        for i in range(args.repeat):
            out = work / f"ours{i}"
            ours.append(timed([sys.executable, "-m", "torchport", "port-ext", str(src), "--to", "hip", "-o", str(out)]))
            shutil.rmtree(out, ignore_errors=True)
            shutil.rmtree(work / f"ours{i}_port_report", ignore_errors=True)
            hip_src = work / f"hip_src{i}"
            shutil.copytree(src, hip_src)  # hipify may write next to its input
            hip_out = work / f"theirs{i}"
            theirs.append(timed([sys.executable, "-c", HIPIFY, str(hip_src), str(hip_out)]))
            shutil.rmtree(hip_src, ignore_errors=True)
            shutil.rmtree(hip_out, ignore_errors=True)
        a, b = statistics.median(ours), statistics.median(theirs)
        print(f"tree: torch {version} include/ATen, {files} files")
        print(f"  torchport port-ext --to hip (process): {a:.2f} s")
        print(f"  torch.utils.hipify (process):          {b:.2f} s")
        print(f"  speedup:                                {b / a:.1f}x   (target >= 3x)")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
