"""torchport analyze: pinned counts on a project with one touchpoint of every category, read-only, no torch."""
import csv
import json
import os
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from conftest import ROOT, tree_digest

from torchport.api import analyze
from torchport.backends import available_targets

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "analyze_project" / "proj"


@pytest.fixture(scope="module")
def result(tmp_path_factory):
    work = tmp_path_factory.mktemp("an")
    proj = work / "proj"
    shutil.copytree(FIXTURE, proj)
    return analyze(proj, output=work / "out")


def test_every_touchpoint_category_is_found(result):
    groups = result.summary()["touchpoints_by_group"]
    for group in ("device APIs", "tensor methods", "device strings", "distributed", "AMP", "env vars",
                  "profiler", "cudnn flags", "CUDA graphs", "NVTX", "capability checks",
                  "C++/CUDA extensions", "third-party packages"):
        assert groups.get(group, 0) >= 1, group


def test_pinned_counts(result):
    s = result.summary()
    assert (s["cuda_files"], s["cuda_kernels"], s["exported_ops"], s["extension_call_sites"]) == (1, 2, 2, 2)
    native = Counter(f.rule for f in result.native.findings)
    assert native == {"TP901": 1, "TP902": 2, "TP903": 1, "TP904": 1, "TP905": 1, "TP906": 1}
    assert sorted(k[2] for k in result.native.kernels) == ["nms_kernel", "scale_kernel"]
    assert result.native.pybind_ops == {"nms"} and result.native.library_ops == {"myops": {"roi_align"}}
    common = Counter(f.rule for f in result.common)
    assert common["TP907"] == 2          # _C.nms(...) and torch.ops.myops.roi_align(...)
    assert common["TP908"] == 2          # import apex, from flash_attn import ...
    assert common["TP909"] == 3          # flash-attn (setup.py), apex and xformers (requirements.txt)
    assert common["TP910"] == 2          # the cu118 index and torch==2.1.0+cu118
    assert [f.old for f in result.unknown_apis()] == ["torch.cuda._lazy_init"]


def test_readiness_follows_the_documented_formula(result):
    npu, musa = result.readiness["npu"], result.readiness["musa"]
    assert npu.kernels == musa.kernels == 2
    assert npu.kernels_blocked and not musa.kernels_blocked
    assert npu.ptx == 1
    for r in result.readiness.values():
        assert r.effort == r.manual + r.review / 4 + 10 * r.blocked
        assert r.grade == next((g for limit, g in (("1", "A"), ("10", "B"), ("50", "C"), ("200", "D"))
                                if r.effort < float(limit)), "E")
    assert npu.blocked > musa.blocked  # musa ports kernels with a tool; npu rewrites them
    assert npu.automatic > 10


def test_unsupported_lists_match_convert(result, tmp_path):
    """Everything convert leaves as unsupported is in analyze's list for that target, and nothing else."""
    import torchport

    for target in available_targets():
        conv = torchport.convert(FIXTURE, target, tmp_path / target, write_reports=False)
        from_convert = sorted((f.file, f.line, f.old) for f in conv.findings if f.action == "unsupported")
        from_analyze = sorted((f.file, f.line, f.old) for f in result.unsupported(target))
        assert from_convert == from_analyze, target
        assert from_convert, target


def test_reports(result):
    out = Path(result.output)
    data = json.loads((out / "analysis.json").read_text())
    assert data["schema_version"] == 1 and data["command"] == "analyze"
    assert set(data["per_target"]) == set(available_targets())
    for name in ("cuda_op_list.csv", "unknown_api.csv", "npu/unsupported_api.csv"):
        rows = list(csv.reader((out / name).open(encoding="utf-8", newline="")))
        assert rows[0] == ["File", "Start Line", "End Line", "OP", "Tips"]
    rows = list(csv.reader((out / "npu" / "unsupported_api.csv").open(encoding="utf-8", newline="")))
    assert len(rows) - 1 == len(result.unsupported("npu"))
    md = (out / "analysis.md").read_text()
    assert "| npu |" in md and "## Readiness per target" in md and "flash-attn" in md


@pytest.mark.subprocess
def test_read_only_and_no_torch(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURE, proj)
    before = tree_digest(proj)
    code = ("import sys; from torchport.api import analyze; analyze(sys.argv[1], 'npu,xpu'); "
            "bad = [m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'torch_'))]; assert not bad, bad")
    p = subprocess.run([sys.executable, "-c", code, str(proj)], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert p.returncode == 0, p.stderr
    assert tree_digest(proj) == before
    assert (tmp_path / "proj_analysis" / "analysis.md").is_file()


@pytest.mark.subprocess
def test_cli_fail_on_and_bad_input(tmp_path):
    proj = tmp_path / "proj"
    shutil.copytree(FIXTURE, proj)
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))

    def run(*args):
        return subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, text=True, env=env)

    p = run("analyze", str(proj), "--to", "npu,musa", "--fail-on", "blocked")
    assert p.returncode == 1 and "npu" in p.stdout and "Grade" in p.stdout
    clean = tmp_path / "clean"
    clean.mkdir()
    (clean / "a.py").write_text("print('no cuda here')\n")
    assert run("analyze", str(clean), "--to", "npu", "--fail-on", "review").returncode == 0
    p = run("analyze", str(proj), "--to", "tpu")
    assert p.returncode == 2 and "unknown target" in p.stderr
    p = run("analyze", str(proj), "-o", str(proj / "inside"))
    assert p.returncode == 2 and "inside the input" in p.stderr


def test_a_package_import_is_one_touchpoint(tmp_path):
    """convert reports `import tensorrt` (TP114) and analyze's package scan does too (TP908): counted once."""
    (tmp_path / "trt.py").write_text("import tensorrt as trt\nimport torch\nx = torch.zeros(1).cuda()\n")
    result = analyze(tmp_path, "npu,mlu", write_reports=False)
    at_import = [f.rule for f in result.touchpoints() if f.line == 1]
    assert at_import == ["TP114"], at_import
    assert any(f.rule == "TP908" for f in result.common), "the package is still known to the package summary"


KERNEL = """#include <torch/extension.h>
__global__ void roll_kernel(float* x) { x[threadIdx.x] += 1; }
at::Tensor roll_forward(at::Tensor x) { roll_kernel<<<1, 32>>>(x.data_ptr<float>()); return x; }
PYBIND11_MODULE(TORCH_EXTENSION_NAME, m) { m.def("roll_forward", &roll_forward, "fused"); }
"""


@pytest.mark.parametrize("optional", [True, False])
def test_an_optional_extension_does_not_block(tmp_path, optional):
    """Swin's fused kernel: imported under try/except ImportError with a pure-PyTorch fallback, off by
    default.  Its kernels are review on npu, not a block; imported plainly, they block."""
    (tmp_path / "k").mkdir()
    (tmp_path / "k" / "fused.cu").write_text(KERNEL)
    imp = ("try:\n    import fused_ext\nexcept ImportError:\n    fused_ext = None\n" if optional
           else "import fused_ext\n")
    (tmp_path / "model.py").write_text("import torch\n" + imp +
                                       "def forward(x, fused=False):\n"
                                       "    if fused and fused_ext is not None:\n"
                                       "        return fused_ext.roll_forward(x)\n"
                                       "    return torch.roll(x, 1)\n")
    r = analyze(tmp_path, "npu", write_reports=False).readiness["npu"]
    assert r.kernels == 1
    assert (r.blocked, r.kernels_optional) == ((0, True) if optional else (1, False))
