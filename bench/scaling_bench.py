"""Does the work grow linearly with the input?  Each case is timed at size n and 4n; a ratio near 4 is
linear, near 16 quadratic.  A case fails (exit 1) when its ratio is above 8.

Cases: convert on long modules of one CUDA idiom each (every target whose rules differ: npu, cpu,
accelerator), the same file through analyze's scanner, a C++ source through port-ext's engine, and
user rules by the thousand.  Sizes are chosen so a quadratic case shows in seconds, not minutes.

    .venv/bin/python bench/scaling_bench.py [--quick]
"""
from __future__ import annotations

import random
import string
import sys
import tempfile
import time
from pathlib import Path

from torchport.converter.run import Converter
from torchport.porting.engine import IncludeResolver, load_map, port_text

HEAD = "import torch\nimport torch.distributed as dist\nt = torch.zeros(2)\ndevice = 'cuda'\n"
PYTHON = {
    "cuda_method": "x{i} = t.cuda()\n",
    "device_string": "d{i} = torch.device('cuda:0')\n",
    "backend_string": "b{i} = 'nccl'\n",
    "to_device": "y{i} = t.to(device)\n",
    "function": "def f{i}(x):\n    return x.cuda(non_blocking=True)\n",
    "synchronize": "torch.cuda.synchronize()\n",
    "config_dict": "cfg{i} = {{'backend': 'nccl', 'device': 'cuda'}}\n",
    "autocast": "with torch.cuda.amp.autocast():\n    z{i} = m(x)\n",
    "fstring": "s{i} = f'cuda:{{rank}}'\n",
    "device_variable": "v{i} = 'cuda'\nw{i} = torch.zeros(1, device=v{i})\n",
    "memory_stats": "m{i} = torch.cuda.max_memory_allocated()\n",
    "import_aliases": "import torch as t{i}\nt{i}.cuda.synchronize()\n",
}
CPP = {
    "kernel": "__global__ void k{i}(float* p) {{ p[threadIdx.x] = 0; }}\n",
    "runtime_calls": "void h{i}(float* p) {{ cudaMalloc(&p, 4); cudaMemcpy(p, p, 4, cudaMemcpyDeviceToHost); }}\n",
    "launch": "void g{i}(float* p) {{ k<<<1, 32>>>(p); }}\n",
}
LIMIT = 8.0


def timed(fn) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def ratio(make, n: int) -> tuple:
    small, big = timed(make(n)), timed(make(4 * n))
    return small, big, big / max(small, 1e-6)


def python_case(converter, pattern):
    def make(n):
        data = (HEAD + "".join(pattern.format(i=i) for i in range(n))).encode()
        return lambda: converter.convert_text("s.py", data, "python")
    return make


def cpp_case(pmap, pattern):
    def make(n):
        text = "#include <cuda_runtime.h>\n" + "".join(pattern.format(i=i) for i in range(n))
        return lambda: port_text("k.cu", text, pmap, IncludeResolver(["k.cu"], pmap.suffixes))
    return make


def rules_case(folder: Path):
    random.seed(1)

    def make(n):
        path = folder / f"rules_{n}.toml"
        with open(path, "w") as f:
            for _ in range(n):
                name = "".join(random.choice(string.ascii_lowercase) for _ in range(12))
                f.write(f'[[rename]]\nold = "mylib.{name}"\nnew = "otherlib.{name}"\n')
        data = b"import torch\nimport mylib\nx = torch.zeros(2).cuda()\n"
        return lambda: Converter("npu", [str(path)]).convert_text("a.py", data, "python")
    return make


def main() -> int:
    n = 250 if "--quick" in sys.argv else 1000
    rows = []
    for target in ("npu", "cpu", "accelerator"):
        converter = Converter(target)
        for name, pattern in PYTHON.items():
            rows.append((f"convert --to {target}: {name}", *ratio(python_case(converter, pattern), n)))
    pmap = load_map("musa")
    for name, pattern in CPP.items():
        rows.append((f"port-ext --to musa: {name}", *ratio(cpp_case(pmap, pattern), n)))
    with tempfile.TemporaryDirectory() as tmp:
        rows.append(("user rules (12-line file)", *ratio(rules_case(Path(tmp)), n * 5)))
    failed = 0
    print(f"{'case':48} {'n':>9} {'4n':>9} {'ratio':>6}")
    for name, small, big, r in rows:
        bad = r > LIMIT and big > 0.05  # below 50 ms the ratio is noise
        failed += bad
        print(f"{name:48} {small:8.3f}s {big:8.3f}s {r:6.1f}{'  QUADRATIC?' if bad else ''}")
    print(f"{len(rows)} cases, {failed} above ratio {LIMIT}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
