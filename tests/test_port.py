"""`torchport port-ext` end to end: the example against golden output, the invariants, modes, bad input."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, tree_digest
from golden_support import PORT_EXAMPLE, PORT_EXPECTED, PORT_TARGETS, port_example

from torchport.core.files import _excluded
from torchport.porting.api import DEFAULT_IGNORES, port
from torchport.porting.engine import load_map

sys.path.insert(0, str(ROOT / "bench"))
from port_checks import check_tree, files_of  # noqa: E402


def run_cli(*args, cwd=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, text=True, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


def ignored(rel):
    return _excluded(rel, DEFAULT_IGNORES)


@pytest.mark.parametrize("target", PORT_TARGETS)
def test_example_matches_golden_output(tmp_path, target):
    result, findings = port_example(target, tmp_path / "out")
    expected = PORT_EXPECTED / target
    assert files_of(tmp_path / "out") == files_of(expected), "regenerate: python tests/golden/regen.py"
    for rel in files_of(expected):
        assert (tmp_path / "out" / rel).read_bytes() == (expected / rel).read_bytes(), rel
    assert findings == (PORT_EXPECTED / f"{target}.findings").read_text(encoding="utf-8")


@pytest.mark.parametrize("target", PORT_TARGETS)
def test_example_invariants_and_idempotency(tmp_path, target):
    out, again = tmp_path / "out", tmp_path / "again"
    result = port(PORT_EXAMPLE, target, out, write_reports=False)
    stats, problems = check_tree(PORT_EXAMPLE, out, result, load_map(target), ignored)
    assert problems == []
    assert stats["includes_checked"] == result.includes_checked == 2
    second = port(out, target, again, write_reports=False)
    assert second.totals()["converted_refs"] == 0 and second.totals()["renamed_files"] == 0
    assert tree_digest(out) == tree_digest(again)


def test_example_musa_specifics(tmp_path):
    result = port(PORT_EXAMPLE, "musa", tmp_path / "out", write_reports=False)
    out = tmp_path / "out"
    assert not list(out.rglob("*.cu")) and not list(out.rglob("*.cuh"))
    gelu = (out / "csrc" / "fused_bias_gelu.mu").read_text()
    assert '#include "kernels/common.muh"' in gelu
    assert "c10::musa::getCurrentMUSAStream()" in gelu and "AT_MUSA_CHECK(musaGetLastError())" in gelu
    assert '"bias_gelu: expected CUDA tensors (cudaStream_t in use)"' in gelu, "strings are never rewritten"
    ops = (out / "csrc" / "fused_ops.cpp").read_text()
    assert "TORCH_LIBRARY_IMPL(fused_ops, PrivateUse1, m)" in ops
    assert "static int Accumulate = 0;" in ops and "// Accumulate and cudaAccumulate below" in ops
    assert 'R"doc(GELU(x + bias); see cudaLaunchKernel docs)doc"' in ops, "raw strings are left alone"
    common = (out / "csrc" / "kernels" / "common.muh").read_text()
    assert "Mentions of cudaMalloc or cudaStream_t in comments" in common
    review = {(f.file, f.line, f.old) for f in result.findings if f.rule == "TP955"}
    assert ("csrc/kernels/common.cuh", 26, "asm(") in review
    assert ("csrc/kernels/common.cuh", 17, "__shfl_down_sync") in review
    assert ("csrc/row_sum.cu", 9, "% 32") in review
    assert result.totals()["left_refs"] == 0, "CUDA_KERNEL_LOOP / CUDA_NUM_THREADS are the project's own names"


def test_port_ext_does_not_import_torch(tmp_path):
    code = (f"import sys; from torchport.porting.api import port; "
            f"port({str(PORT_EXAMPLE)!r}, 'musa', {str(tmp_path / 'o')!r}); "
            f"port({str(PORT_EXAMPLE)!r}, 'npu', report_dir={str(tmp_path / 'r')!r}); "
            "assert not [m for m in sys.modules if m == 'torch' or m.startswith('torch.')], 'torch imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------- CLI, layout and modes
def test_cli_default_layout_and_reports(tmp_path):
    src = tmp_path / "ext"
    subprocess.run(["cp", "-r", str(PORT_EXAMPLE), str(src)], check=True)
    before = tree_digest(src)
    code, out, err = run_cli("port-ext", str(src), "--to", "musa")
    assert code == 0, err
    assert tree_digest(src) == before, "the input is never modified"
    assert "project includes: 2 checked, all resolve" in out
    reports = tmp_path / "ext_musa_port_report"
    data = json.loads((reports / "port_report.json").read_text())
    assert data["schema_version"] == 1 and data["target"] == "musa"
    assert data["totals"]["renamed_files"] == 3 and data["totals"]["converted_refs"] > 15
    md = (reports / "port_report.md").read_text()
    assert "| csrc/row_sum.cu | csrc/row_sum.mu |" in md and "## Needs review" in md
    csv = (reports / "port_stats.csv").read_text().splitlines()
    assert csv[0] == "API,Replacement,Count,Status"
    assert any(line.startswith("AT_CUDA_CHECK,AT_MUSA_CHECK,1,converted") for line in csv)
    assert (tmp_path / "ext_musa" / "csrc" / "row_sum.mu").is_file()


def test_cli_json_and_diff_write_nothing_but_stdout(tmp_path):
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", "musa", "--diff")
    assert code == 0, err
    assert "--- a/csrc/row_sum.cu\n+++ b/csrc/row_sum.mu" in out
    assert "-  AT_CUDA_CHECK(cudaGetLastError());\n+  AT_MUSA_CHECK(musaGetLastError());" in out
    assert not (PORT_EXAMPLE.parent / "cuda_extension_musa").exists()
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", "hip", "-o", str(tmp_path / "h"), "--json")
    assert code == 0, err
    assert json.loads(out)["totals"]["includes_checked"] == 2


def test_in_place_keeps_a_backup_of_every_file_it_changes_or_renames(tmp_path):
    src = tmp_path / "ext"
    subprocess.run(["cp", "-r", str(PORT_EXAMPLE), str(src)], check=True)
    original = tree_digest(src)
    code, out, err = run_cli("port-ext", str(src), "--to", "musa", "--in-place")
    assert code == 0, err
    backup = tmp_path / "ext.torchport-backup"
    assert (src / "csrc" / "row_sum.mu").is_file() and not (src / "csrc" / "row_sum.cu").exists()
    saved = tree_digest(backup)
    for rel in ("csrc/row_sum.cu", "csrc/kernels/common.cuh", "csrc/fused_ops.cpp", "setup.py"):
        assert saved[rel] == original[rel]
    assert "fused_ops/__init__.py" not in saved, "unchanged files are not backed up"
    assert (tmp_path / "ext_musa_port_report" / "port_report.md").is_file()


def test_single_file(tmp_path):
    (tmp_path / "k.cu").write_text("cudaStream_t s; cudaMalloc(&p, 4);\n")
    code, out, err = run_cli("port-ext", str(tmp_path / "k.cu"), "--to", "musa")
    assert code == 0, err
    assert (tmp_path / "k_musa.mu").read_text() == "musaStream_t s; musaMalloc(&p, 4);\n"
    code, out, err = run_cli("port-ext", str(tmp_path / "k.cu"), "--to", "musa", "-o", str(tmp_path / "x.cu"))
    assert code == 0 and (tmp_path / "x.cu").read_text().startswith("musaStream_t")


def test_other_vendors_subtrees_are_copied_unchanged_recursively(tmp_path):
    src = tmp_path / "p"
    for sub in ("ops/csrc/mlu", "ops/csrc/pytorch/npu", "mps", "x/parrots/y"):
        (src / sub).mkdir(parents=True)
        (src / sub / "k.cu").write_text("cudaMalloc(&p, 4);\n")
    (src / "ops" / "k.cu").write_text("cudaMalloc(&p, 4);\n")
    result = port(src, "musa", tmp_path / "o", write_reports=False)
    out = tmp_path / "o"
    assert (out / "ops" / "k.mu").read_text() == "musaMalloc(&p, 4);\n"
    for sub in ("ops/csrc/mlu", "ops/csrc/pytorch/npu", "mps", "x/parrots/y"):
        assert (out / sub / "k.cu").read_text() == "cudaMalloc(&p, 4);\n", sub
    assert sorted(r.status for r in result.files) == ["ignored"] * 4 + ["ported"]
    port(src, "musa", tmp_path / "o2", ignore=["ops/*"], write_reports=False)
    assert (tmp_path / "o2" / "ops" / "k.cu").read_text() == "cudaMalloc(&p, 4);\n"
    assert (tmp_path / "o2" / "mps" / "k.mu").is_file(), "--ignore replaces the default list"


# ---------------------------------------------------------------- user maps
def test_user_maps_extend_and_override(tmp_path):
    flat = tmp_path / "flat.json"
    flat.write_text(json.dumps({"myCudaHelper": "myMusaHelper", "cudaMalloc": "customMalloc"}))
    sections = tmp_path / "sections.json"
    sections.write_text(json.dumps({"unsupported": {"cudaMallocAsync": "no stream-ordered allocator on this SDK"},
                                    "review": {"cudaMemcpy": "check the copy kind"},
                                    "headers": {"my/cuda_utils.h": "my/musa_utils.h"}}))
    (tmp_path / "a.cu").write_text('#include <my/cuda_utils.h>\nmyCudaHelper(); cudaMalloc(&p, 1);\n'
                                   'cudaMallocAsync(&p, 1, s); cudaMemcpy(d, s, n, k);\n')
    result = port(tmp_path / "a.cu", "musa", tmp_path / "o.mu", maps=[flat, sections], write_reports=False)
    assert (tmp_path / "o.mu").read_text() == ('#include <my/musa_utils.h>\nmyMusaHelper(); customMalloc(&p, 1);\n'
                                               'cudaMallocAsync(&p, 1, s); musaMemcpy(d, s, n, k);\n')
    by_rule = {(f.rule, f.old): f.message for f in result.findings if f.rule in ("TP952", "TP955")}
    assert by_rule[("TP952", "cudaMallocAsync")] == "no stream-ordered allocator on this SDK"
    assert by_rule[("TP955", "cudaMemcpy")] == "check the copy kind"
    assert result.user_maps == [str(flat), str(sections)]


@pytest.mark.parametrize("content, message", [
    ("{not json", "invalid JSON"),
    ("[1, 2]", "must hold a JSON object"),
    ('{"identifiers": {"a": 1}}', "'identifiers' must map names to strings"),
])
def test_bad_user_map_is_one_line_exit_2(tmp_path, content, message):
    bad = tmp_path / "bad.json"
    bad.write_text(content)
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", "musa", "-m", str(bad), "-o", str(tmp_path / "o"))
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1
    assert not (tmp_path / "o").exists(), "nothing is written when a map is bad"


# ---------------------------------------------------------------- bad input
def test_binary_and_non_utf8_files(tmp_path):
    src = tmp_path / "p"
    src.mkdir()
    blob = b"\x7fELF\0\0cudaMalloc\0" + bytes(range(256))
    (src / "blob.cu").write_bytes(blob)
    latin = "// Copyright \xa9 J\xfcrgen\ncudaMalloc(&p, 4); // gr\xfc\xdfe\n".encode("latin-1")
    (src / "latin.cpp").write_bytes(latin)
    gbk = "// 中文注释 cudaMalloc\ncudaFree(p);\n".encode("gbk")
    (src / "gbk.h").write_bytes(gbk)
    code, out, err = run_cli("port-ext", str(src), "--to", "musa", "-o", str(tmp_path / "o"))
    assert code == 0, err
    assert (tmp_path / "o" / "blob.mu").read_bytes() == blob, "binary content kept byte for byte"
    assert (tmp_path / "o" / "latin.cpp").read_bytes() == latin.replace(b"cudaMalloc(", b"musaMalloc(")
    assert (tmp_path / "o" / "gbk.h").read_bytes() == gbk.replace(b"cudaFree", b"musaFree")
    data = json.loads((tmp_path / "o_port_report" / "port_report.json").read_text())
    assert any(f["file"] == "blob.cu" and "binary" in f["message"] for f in data["findings"])


def test_unreadable_file_is_listed_and_the_run_goes_on(tmp_path, monkeypatch):
    from pathlib import Path

    src = tmp_path / "p"
    src.mkdir()
    (src / "a.cu").write_text("cudaMalloc(&p, 4);\n")
    (src / "locked.cu").write_text("cudaFree(p);\n")
    real = Path.read_bytes

    def read_bytes(self):  # root can read anything, so the permission error is injected
        if self.name == "locked.cu":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", read_bytes)
    result = port(src, "musa", tmp_path / "o", write_reports=False, jobs=1)
    status = {r.path: r.status for r in result.files}
    assert status == {"a.cu": "ported", "locked.cu": "error"}
    assert [f.message for f in result.findings if f.action == "error"] == ["cannot read: Permission denied"]
    assert (tmp_path / "o" / "a.mu").read_text() == "musaMalloc(&p, 4);\n"


@pytest.mark.parametrize("args, message", [
    (["--to", "musa", "-o", "{src}/inside"], "inside the input"),
    (["--to", "rocm"], "port-ext target must be one of"),
    (["--to", "npu", "--in-place"], "inventory only"),
    (["--to", "musa", "-o", "{src}"], "is the input itself"),
])
def test_usage_errors_exit_2_with_one_line(tmp_path, args, message):
    src = tmp_path / "p"
    src.mkdir()
    (src / "a.cu").write_text("cudaMalloc(&p, 4);\n")
    before = tree_digest(src)
    code, out, err = run_cli("port-ext", str(src), *[a.format(src=src) for a in args])
    assert code == 2 and message in err, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert tree_digest(src) == before


def test_missing_input_exit_2(tmp_path):
    code, out, err = run_cli("port-ext", str(tmp_path / "nope"), "--to", "musa")
    assert code == 2 and "input not found" in err


# ---------------------------------------------------------------- npu / mlu inventory
@pytest.mark.parametrize("target", ["npu", "mlu"])
def test_inventory(tmp_path, target):
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", target, "-o", str(tmp_path / "inv"))
    assert code == 0, err
    assert "2 kernels in 3 CUDA files, 2 launch sites, 2 exported ops, 2 Python call sites" in out
    assert not (PORT_EXAMPLE.parent / f"cuda_extension_{target}").exists(), "an inventory writes no sources"
    inv = json.loads((tmp_path / "inv" / "port_report.json").read_text())["inventory"]
    kernels = {k["name"]: k for k in inv["kernels"]}
    assert kernels["row_sum_kernel"]["signature"] == (
        "__global__ void row_sum_kernel(const float* x, float* out, int rows, int cols)")
    assert kernels["bias_gelu_kernel"]["file"] == "csrc/fused_bias_gelu.cu"
    assert {(x["file"], x["kernel"]) for x in inv["launches"]} == {
        ("csrc/fused_bias_gelu.cu", "bias_gelu_kernel"), ("csrc/row_sum.cu", "row_sum_kernel")}
    assert inv["pybind_ops"] == ["bias_gelu"] and inv["library_ops"] == {"fused_ops": ["row_sum"]}
    calls = {(c["file"], c["line"]) for c in inv["python_calls"]}
    assert calls == {("fused_ops/__init__.py", 9), ("fused_ops/__init__.py", 13)}
    md = (tmp_path / "inv" / "port_report.md").read_text()
    assert "## Kernels (2) in 3 CUDA files" in md and "row_sum_kernel" in md
