"""`torchport port-ext` end to end: the example against golden output, the invariants, modes, bad input."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, tree_digest
from golden_support import PORT_EXAMPLE, PORT_EXPECTED, PORT_TARGETS, port_example

from torchport.api import port_ext as port
from torchport.commands.port import DEFAULT_IGNORES
from torchport.core.files import _excluded
from torchport.porting.engine import load_map

sys.path.insert(0, str(ROOT / "bench"))
from port_checks import check_tree, files_of


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


@pytest.mark.subprocess
def test_port_ext_does_not_import_torch(tmp_path):
    code = (f"import sys; from torchport.api import port_ext as port; "
            f"port({str(PORT_EXAMPLE)!r}, 'musa', {str(tmp_path / 'o')!r}); "
            f"port({str(PORT_EXAMPLE)!r}, 'npu', report_dir={str(tmp_path / 'r')!r}); "
            "assert not [m for m in sys.modules if m == 'torch' or m.startswith('torch.')], 'torch imported'")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")))
    assert p.returncode == 0, p.stderr


# ---------------------------------------------------------------- CLI, layout and modes
@pytest.mark.subprocess
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


@pytest.mark.subprocess
def test_cli_json_and_diff_write_nothing_but_stdout(tmp_path):
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", "musa", "--diff")
    assert code == 0, err
    assert "--- a/csrc/row_sum.cu\n+++ b/csrc/row_sum.mu" in out
    assert "-  AT_CUDA_CHECK(cudaGetLastError());\n+  AT_MUSA_CHECK(musaGetLastError());" in out
    assert not (PORT_EXAMPLE.parent / "cuda_extension_musa").exists()
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", "hip", "-o", str(tmp_path / "h"), "--json")
    assert code == 0, err
    assert json.loads(out)["totals"]["includes_checked"] == 2


@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
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


@pytest.mark.subprocess
@pytest.mark.parametrize("maps, key", [
    ({"::cuda::": "::musa::"}, "'::cuda::'"),                              # torch_musa's guide, rule 8
    ({".is_cuda()": ".is_privateuseone()"}, "'.is_cuda()'"),               # rule 12
    ({", CUDA,": ", PrivateUse1,"}, "', CUDA,'"),                           # rule 10
    ({"#include <c10/cuda/CUDAGuard.h>": "#include \"x.h\""}, "'#include <c10/cuda/CUDAGuard.h>'"),
    ({".cuh": ".muh"}, "'.cuh'"),
    ({"identifiers": {"cuda Malloc": "x"}}, "'cuda Malloc'"),
    ({"unsupported": {"cudaMalloc(": "no"}}, "'cudaMalloc('"),
    ({"headers": {"/cuda/": "/musa/"}}, "'/cuda/'"),
    ({"headers": {"<cuda.h>": "musa.h"}}, "'<cuda.h>'"),
    ({"suffixes": {"": ".mu"}}, "''"),
])
def test_user_map_keys_that_can_never_match_are_a_usage_error(tmp_path, maps, key):
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps(maps))
    code, out, err = run_cli("port-ext", str(PORT_EXAMPLE), "--to", "musa", "-m", str(bad), "-o", str(tmp_path / "o"))
    assert code == 2 and f"key {key} can never match" in err and len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err and not (tmp_path / "o").exists()


def test_user_map_keys_that_match_are_accepted(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"identifiers": {"at::cuda::myHelper": "c10::musa::myHelper", "::cudaFoo": "::musaFoo",
                                                "_CU_H_": "_MU_H_"},
                                "headers": {"my-lib/cuda_utils.cuh": "my-lib/musa_utils.muh"},
                                "suffixes": {".cu": ".mu", "_cuda.cpp": "_musa.cpp"}}))
    assert load_map("musa", [good]).identifiers["at::cuda::myHelper"] == "c10::musa::myHelper"


@pytest.mark.parametrize("target", PORT_TARGETS)
def test_every_bundled_key_is_one_port_ext_can_match(target, tmp_path):
    """The bundled tables pass the check -m maps get (written back as one user map)."""
    pmap = load_map(target)
    sections = {"identifiers": pmap.identifiers, "unsupported": pmap.unsupported, "review": pmap.review,
                "headers": pmap.headers, "suffixes": pmap.suffixes}
    (tmp_path / "all.json").write_text(json.dumps({**sections, "identifiers": {**pmap.identifiers,
                                                                               **{k: k for k in pmap.methods}}}))
    load_map(target, [tmp_path / "all.json"])


# ---------------------------------------------------------------- output that compiles
PORT_COMPILE = ROOT / "tests" / "fixtures" / "port_compile"


def test_method_mapping_only_where_the_receiver_has_the_new_method(tmp_path):
    """is_cuda() -> is_privateuseone() only on tensors, devices and TensorImpl (the classes that declare it):
    `x.type()` is at::DeprecatedTypeProperties (Swin's kernel: x.type().is_cuda()), which has none."""
    result = port(PORT_COMPILE / "receivers.cu", "musa", tmp_path / "r.mu", write_reports=False)
    lines = (tmp_path / "r.mu").read_text().splitlines()
    for line in lines:
        real = line.partition("// class: ")[2]
        if real in ("at::TensorBase", "c10::Device", "c10::TensorImpl"):
            assert ".is_cuda(" not in line and "->is_cuda(" not in line, line
        elif real:
            assert "is_privateuseone" not in line, line
    assert lines[13].startswith('  TORCH_CHECK(x.type().is_cuda(), "x must be a CUDA tensor");')
    assert lines[7] == "  bool is_cuda() const { return on_gpu; }", "the project's own method is its own"
    assert lines[29].startswith("  bool is_cuda = x.is_privateuseone();"), "a variable named is_cuda is not a call"
    left = {f.line: f.message for f in result.findings if f.rule == "TP955" and f.old == "is_cuda"}
    assert sorted(left) == [9, 14, 16, 18, 28, 29]
    assert left[14] == ("not renamed to is_privateuseone(): the receiver `.type()` is at::DeprecatedTypeProperties "
                        "(ATen/core/DeprecatedTypeProperties.h), which has no is_privateuseone(); test the tensor or "
                        "the device itself: .is_privateuseone()")
    assert "`props2` is at::DeprecatedTypeProperties" in left[18]   # auto props2 = x.type();
    assert "`p` is of the project's own class" in left[29] and "`this`" in left[9]
    assert "torch::nn::utils::rnn::PackedSequence" in left[28]
    stats, problems = check_tree(PORT_COMPILE, tmp_path / "tree", port(PORT_COMPILE, "musa", tmp_path / "tree",
                                                                         write_reports=False),
                                 load_map("musa"), ignored)
    assert problems == [], "bench/port_checks.py agrees"


def test_user_identifier_map_wins_over_a_method_mapping(tmp_path):
    user = tmp_path / "m.json"
    user.write_text(json.dumps({"is_cuda": "is_musa_tensor"}))
    port(PORT_COMPILE / "receivers.cu", "musa", tmp_path / "r.mu", maps=[user], write_reports=False)
    assert "x.type().is_musa_tensor()" in (tmp_path / "r.mu").read_text()


def test_nvcc_half_dispatch_and_arch_macros_musa(tmp_path):
    """__NVCC__ -> __MUSACC__ (torch_musa's guide calls it a fixed rule); AT_DISPATCH_*_AND_HALF kept and
    reported once per file (the guide drops Half only when mcc fails on it); __CUDA_ARCH__ -> __MUSA_ARCH__ as
    SimplePorting does, each line reported with MUSA's values."""
    result = port(PORT_COMPILE / "macros.cu", "musa", tmp_path / "m.mu", write_reports=False)
    text = (tmp_path / "m.mu").read_text()
    assert "#ifdef __MUSACC__\n" in text and "#ifdef __NVCC__" not in text
    assert text.count("AT_DISPATCH_FLOATING_TYPES_AND_HALF(") == 2
    assert "#if defined(__MUSA_ARCH__) && __MUSA_ARCH__ >= 700" in text
    review = [(f.line, f.old, f.message) for f in result.findings if f.rule == "TP955"]
    assert [(line, old) for line, old, _ in review] == [(10, "__CUDA_ARCH__"),
                                                         (18, "AT_DISPATCH_FLOATING_TYPES_AND_HALF")]
    assert "210, 220, 310" in review[0][2] and ">= 700 is false" in review[0][2]
    assert "not implemented for 'Half'" in review[1][2]
    assert '-m {"AT_DISPATCH_FLOATING_TYPES_AND_HALF": "AT_DISPATCH_FLOATING_TYPES"}' in review[1][2]
    # ... which does what it says: the map converts it and the "kept" advice goes
    drop = tmp_path / "drop_half.json"
    drop.write_text(json.dumps({"AT_DISPATCH_FLOATING_TYPES_AND_HALF": "AT_DISPATCH_FLOATING_TYPES"}))
    result = port(PORT_COMPILE / "macros.cu", "musa", tmp_path / "d.mu", maps=[drop], write_reports=False)
    assert (tmp_path / "d.mu").read_text().count("AT_DISPATCH_FLOATING_TYPES(x.scalar_type()") == 2
    assert not [f for f in result.findings if f.rule == "TP955" and "HALF" in f.old]


def test_nvcc_half_dispatch_and_arch_macros_hip(tmp_path):
    """hipify keeps __NVCC__ (no table entry), which clang never defines for HIP: reported.  Half dispatch is
    fine on ROCm; __CUDA_ARCH__ is kept and reported as before."""
    result = port(PORT_COMPILE / "macros.cu", "hip", tmp_path / "m.hip", write_reports=False)
    text = (tmp_path / "m.hip").read_text()
    assert "#ifdef __NVCC__\n" in text and text.count("AT_DISPATCH_FLOATING_TYPES_AND_HALF(") == 2
    review = {(f.line, f.old): f.message for f in result.findings if f.rule == "TP955"}
    assert sorted(review) == [(4, "__NVCC__"), (10, "__CUDA_ARCH__")]
    assert "__HIPCC__" in review[(4, "__NVCC__")]


# ---------------------------------------------------------------- bad input
@pytest.mark.subprocess
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
    assert code == 1, err  # a source it could not port is an error, not "0 left"
    assert (tmp_path / "o" / "blob.cu").read_bytes() == blob, "binary content kept byte for byte, not renamed"
    assert not (tmp_path / "o" / "blob.mu").exists()
    assert (tmp_path / "o" / "latin.cpp").read_bytes() == latin.replace(b"cudaMalloc(", b"musaMalloc(")
    assert (tmp_path / "o" / "gbk.h").read_bytes() == gbk.replace(b"cudaFree", b"musaFree")
    data = json.loads((tmp_path / "o_port_report" / "port_report.json").read_text())
    assert any(f["file"] == "blob.cu" and f["action"] == "error" and "not ported" in f["message"]
               for f in data["findings"])


def test_unreadable_file_is_listed_and_the_run_goes_on(tmp_path, monkeypatch):
    from torchport.core import files

    src = tmp_path / "p"
    src.mkdir()
    (src / "a.cu").write_text("cudaMalloc(&p, 4);\n")
    (src / "locked.cu").write_text("cudaFree(p);\n")
    real = files.read_bytes

    def read_bytes(path, limit=-1):  # root can read anything, so the permission error is injected
        if path.name == "locked.cu":
            raise PermissionError(13, "Permission denied", str(path))
        return real(path, limit)

    monkeypatch.setattr(files, "read_bytes", read_bytes)
    result = port(src, "musa", tmp_path / "o", write_reports=False, jobs=1)
    status = {r.path: r.status for r in result.files}
    assert status == {"a.cu": "ported", "locked.cu": "error"}
    assert [f.message for f in result.findings if f.action == "error"] == [
        "cannot read: Permission denied; left out of this run"]
    assert (tmp_path / "o" / "a.mu").read_text() == "musaMalloc(&p, 4);\n"


@pytest.mark.subprocess
@pytest.mark.parametrize("args, message", [
    (["--to", "musa", "-o", "{src}/inside"], "inside the input"),
    (["--to", "xpu"], "port-ext does not cover xpu"),
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


@pytest.mark.subprocess
def test_missing_input_exit_2(tmp_path):
    code, out, err = run_cli("port-ext", str(tmp_path / "nope"), "--to", "musa")
    assert code == 2 and "input not found" in err


# ---------------------------------------------------------------- npu / mlu inventory
@pytest.mark.subprocess
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
