"""bench/port_checks.py must catch what it is meant to catch (offline, on the bundled example)."""
import shutil
import sys

import pytest
from conftest import ROOT
from golden_support import PORT_EXAMPLE

from torchport.api import port_ext as port
from torchport.porting.consistency import check_includes
from torchport.porting.engine import load_map

sys.path.insert(0, str(ROOT / "bench"))
from port_checks import Explainer, check_tree


@pytest.fixture(scope="module")
def ported(tmp_path_factory):
    out = tmp_path_factory.mktemp("port") / "out"
    return out, port(PORT_EXAMPLE, "musa", out, write_reports=False)


def sabotage(ported, tmp_path, rel, old, new):
    out, result = ported
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    path = copy / rel
    text = path.read_text()
    assert old in text
    path.write_text(text.replace(old, new, 1))
    _, problems = check_tree(PORT_EXAMPLE, copy, result, load_map("musa"), lambda rel: False)
    return problems


def test_clean_port_has_no_problems(ported):
    out, result = ported
    assert check_tree(PORT_EXAMPLE, out, result, load_map("musa"), lambda rel: False)[1] == []


@pytest.mark.parametrize("rel, old, new, expect", [
    ("csrc/fused_ops.cpp", "static int Accumulate", "static int Acmumulate", "identifier changed without a mapping"),
    ("csrc/kernels/common.muh", "Mentions of cudaMalloc", "Mentions of musaMalloc", "comment changed"),
    ("csrc/fused_bias_gelu.mu", "(cudaStream_t in use)", "(musaStream_t in use)", "string changed"),
    ("csrc/row_sum.mu", '#include "kernels/common.muh"', '#include "kernels/common.cuh"',
     '"kernels/common.cuh" resolves to None'),
    ("csrc/row_sum.mu", '#include <torch/extension.h>', '#include <torch/musa_extension.h>',
     "include changed without a mapping"),
    ("csrc/fused_bias_gelu.mu", "musaStream_t stream", "cudaStream_t stream", "mapped identifier left unchanged"),
    ("csrc/fused_bias_gelu.mu", "musaStream_t stream", "musaStream_t stream2", "identifier changed without"),
    ("setup.py", "ext = MUSAExtension(", "ext = MUSAExtension((", "does not parse"),
    ("fused_ops/__init__.py", "in one kernel", "in one MUSA kernel", "neither a source nor a build file"),
])
def test_sabotage_is_caught(ported, tmp_path, rel, old, new, expect):
    problems = sabotage(ported, tmp_path, rel, old, new)
    assert any(expect in p for p in problems), problems


def test_an_include_that_no_longer_resolves_is_caught(ported, tmp_path):
    out, result = ported
    copy = tmp_path / "out"
    shutil.copytree(out, copy)
    (copy / "csrc" / "kernels" / "common.muh").rename(copy / "csrc" / "kernels" / "common2.muh")
    _, problems = check_tree(PORT_EXAMPLE, copy, result, load_map("musa"), lambda rel: False)
    assert any("missing from the output" in p for p in problems)
    assert any('#include "kernels/common.muh" resolves to None' in p for p in problems)


def test_renames_are_checked(ported):
    out, result = ported
    (kept,) = [r for r in result.files if r.path == "csrc/row_sum.cu"]
    kept.output = "csrc/row_sum.cu"
    try:
        problems = check_tree(PORT_EXAMPLE, out, result, load_map("musa"), lambda rel: False)[1]
    finally:
        kept.output = "csrc/row_sum.mu"
    assert any("expected the .mu suffix" in p for p in problems)


def test_explainer_is_longest_match_on_whole_identifiers():
    ex = Explainer({"cudaMalloc": "musaMalloc", "cudaMallocHost": "musaMallocHost", "at::cuda::X": "c10::musa::X"})
    assert ex.rewrite("cudaMallocHost") == "musaMallocHost"
    assert ex.rewrite("mycudaMalloc") == "mycudaMalloc"
    assert ex.rewrite("at::cuda::X") == "c10::musa::X"
    assert ex.rewrite("cudaMallocManaged") == "cudaMallocManaged"


def test_port_ext_own_include_check_reports_breakage(ported):
    _, result = ported
    files = [r for r in result.files]
    (gelu,) = [r for r in files if r.path == "csrc/fused_bias_gelu.cu"]
    saved = gelu.includes
    gelu.includes = [(line, old, "kernels/nothere.muh" if old.endswith("common.cuh") else new)
                     for line, old, new in saved]
    try:
        checked, broken = check_includes(files)
    finally:
        gelu.includes = saved
    assert checked == 2
    assert broken == [("csrc/fused_bias_gelu.mu", 5, "kernels/nothere.muh", "csrc/kernels/common.muh")]


def test_a_method_renamed_on_a_receiver_without_it_is_caught(tmp_path):
    """x.type().is_privateuseone() (what the guide's substring rule writes for Swin's kernel) and a mapped
    method call left without a report are both caught."""
    src = ROOT / "tests" / "fixtures" / "port_compile"
    out = tmp_path / "out"
    result = port(src, "musa", out, write_reports=False)
    assert check_tree(src, out, result, load_map("musa"), lambda rel: False)[1] == []
    ported = (out / "receivers.mu").read_text()
    (out / "receivers.mu").write_text(ported.replace("x.type().is_cuda()", "x.type().is_privateuseone()"))
    problems = check_tree(src, out, result, load_map("musa"), lambda rel: False)[1]
    assert problems == ["receivers.cu:14: is_cuda -> is_privateuseone on a receiver ending in .type() "
                        "(at::DeprecatedTypeProperties), which has no is_privateuseone()"]
    (out / "receivers.mu").write_text(ported.replace("dev.is_privateuseone()", "dev.is_cuda()"))
    problems = check_tree(src, out, result, load_map("musa"), lambda rel: False)[1]
    assert problems == ["receivers.cu:22: mapped method call left unchanged and not reported: 'is_cuda'"]
