"""Knowledge-base files: schema, provenance, and facts their sources state."""
import json
from pathlib import Path

import pytest

from torchport.backends import available_targets, load_target
from torchport.core.tomlfile import tomllib
from torchport.kb.operators import COMPOSITE, FALLBACK, MISSING, SUPPORTED, UNKNOWN, check, classify, op_list
from torchport.kb.packages import packages

KB = Path(__file__).resolve().parents[1] / "src" / "torchport" / "kb"


@pytest.mark.parametrize("path", sorted((KB / "api").glob("*.json")), ids=lambda p: p.name)
def test_api_lists_have_provenance(path):
    d = json.loads(path.read_text())
    for key in ("namespace", "version", "source", "extracted", "method", "names", "modules"):
        assert d.get(key), key
    assert d["names"] == sorted(set(d["names"]))


@pytest.mark.parametrize("path", sorted(p for p in (KB / "ops").glob("*.json") if p.name != "aten.json"),
                         ids=lambda p: p.name)
def test_vendor_op_lists_have_provenance(path):
    d = json.loads(path.read_text())
    assert d["target"] == path.stem and d["extracted"] and d["method"]
    assert d["fallback"] in ("cpu", "error") and d["fallback_source"]
    versions = d["versions"]
    assert versions and [v["torch_version"] for v in versions] == sorted(
        (v["torch_version"] for v in versions), key=lambda s: tuple(int(x) for x in s.split(".")))
    for v in versions:
        assert v["source"] and v["vendor_version"] and len(v["ops"]) > 500
        assert all("(" not in op and " " not in op for op in v["ops"])


def test_api_facts_from_the_sources():
    npu, mlu, musa, xpu = (load_target(t) for t in ("npu", "mlu", "musa", "xpu"))
    assert npu.has("NPUGraph") and npu.has("synchronize") and npu.has("amp") and not npu.has("nvtx")
    assert npu.has("autocast", "amp") and npu.has("mstx")
    assert mlu.has("MLUGraph") and mlu.has("cnpx") and not mlu.has("utilization")
    assert musa.has("MUSAGraph") and musa.has("FloatTensor") and not musa.has("nvtx")   # FloatTensor: C++ (run time)
    assert xpu.has("XPUGraph") and not xpu.has("FloatTensor")


def test_op_facts_from_the_sources():
    npu = op_list(load_target("npu"))
    assert npu.fallback == "cpu" and npu.vendor_version == "2.14.0"
    for op in ("add.Tensor", "_local_scalar_dense", "native_layer_norm", "convolution_overrideable"):
        assert op in npu.ops, op
    for op in ("_cudnn_rnn", "_flash_attention_forward"):
        assert op not in npu.ops, op
    musa = op_list(load_target("musa"))
    assert musa.fallback == "error" and "bitwise_right_shift.Tensor" in musa.ops and "_cudnn_rnn" not in musa.ops
    aten = json.loads((KB / "ops" / "aten.json").read_text())
    assert aten["ops"]["linear"]["composite"] == "implicit"
    assert aten["ops"]["_cudnn_rnn"]["dispatch"] == ["CUDA"]


def test_versions_are_chosen_by_torch_version():
    npu = load_target("npu")
    assert op_list(npu, "2.4.0").vendor_version == "2.4.0.post4"
    assert op_list(npu, "2.5.1").vendor_version == "2.4.0.post4" and "2.5.1" in op_list(npu, "2.5.1").note
    assert op_list(npu, "1.13.0").vendor_version == "2.1.0.post17"
    assert op_list(load_target("mlu"), "2.4.1").torch_version == "2.4.1"


def test_classify():
    npu, musa, cpu = (op_list(load_target(t)) for t in ("npu", "musa", "cpu"))
    assert classify("aten::add.Tensor", npu).status == SUPPORTED
    assert classify("aten::linear", npu).status == COMPOSITE
    assert classify("aten::linalg_eig", npu).status == FALLBACK        # a CPU kernel: npu's CPU fallback runs it
    assert classify("aten::_cudnn_ctc_loss", npu).status == MISSING    # CUDA-only: the CPU fallback cannot run it
    assert classify("aten::_cudnn_ctc_loss", musa).status == MISSING
    assert classify("aten::_cudnn_ctc_loss", cpu).status == MISSING
    for target in (npu, musa, cpu):   # the cuDNN kernel of lstm/gru/rnn is checked as those ops, never "missing"
        st = classify("aten::_cudnn_rnn", target)
        assert st.status in (SUPPORTED, COMPOSITE) and "lstm.input" in st.asked, (target.target, st)
    assert classify("add.default", cpu).op == "add"
    assert classify("aten::made_up_op", npu).status == UNKNOWN
    assert classify("torchvision::nms", npu).status == UNKNOWN
    assert classify("aten::add.Tensor", None).status == UNKNOWN


def test_ops_check_file_formats(tmp_path):
    from torchport.kb.operators import load_ops_file

    (tmp_path / "a.json").write_text('["aten::add.Tensor", "aten::add.Tensor", "aten::_cudnn_ctc_loss"]')
    (tmp_path / "b.json").write_text('{"aten::add.Tensor": 3}')
    (tmp_path / "c.json").write_text('{"ops": [{"op": "aten::_cudnn_ctc_loss", "count": 2, "modules": ["rnn"]}]}')
    ops, rows = check(load_ops_file(tmp_path / "a.json"), load_target("musa"))
    assert [(s.op, s.status, n) for s, n, _ in rows] == [("_cudnn_ctc_loss", MISSING, 1), ("add.Tensor", SUPPORTED, 2)]
    assert load_ops_file(tmp_path / "b.json") == [("aten::add.Tensor", 3, [])]
    assert load_ops_file(tmp_path / "c.json") == [("aten::_cudnn_ctc_loss", 2, ["rnn"])]


def test_ops_check_cli(tmp_path):
    from torchport.cli import main

    (tmp_path / "ops.json").write_text('["aten::add.Tensor", "aten::linalg_eig"]')
    assert main(["ops", "check", str(tmp_path / "ops.json"), "--to", "npu"]) == 0
    assert main(["ops", "check", str(tmp_path / "ops.json"), "--to", "npu", "--fail-on", "missing"]) == 0
    assert main(["ops", "check", str(tmp_path / "ops.json"), "--to", "npu", "--fail-on", "fallback"]) == 1
    (tmp_path / "ops.json").write_text('["aten::add.Tensor", "aten::_cudnn_ctc_loss"]')
    assert main(["ops", "check", str(tmp_path / "ops.json"), "--to", "musa", "--fail-on", "missing"]) == 1
    (tmp_path / "bad.json").write_text('{"ops": 3}')
    assert main(["ops", "check", str(tmp_path / "bad.json"), "--to", "npu"]) == 2


def test_packages_schema():
    data = tomllib.loads((KB / "packages.toml").read_text())["packages"]
    assert len(data) >= 25
    targets = set(available_targets())
    for name, p in data.items():
        assert p["imports"] and p["pypi"] and p["kind"] in ("cuda-only", "cuda-first") and p["sources"], name
        assert p["what"] and p["instead"], name
        for t, alt in p.get("targets", {}).items():
            assert t in targets and alt["instead"] and alt["source"].startswith("http"), (name, t)
    kb = packages()
    assert kb.by_import("apex.amp").name == "apex" and kb.by_import("amp_C").name == "apex"
    assert kb.by_import("nvidia.dali.fn").name == "nvidia-dali"
    assert kb.by_distribution("Flash_Attn").name == "flash-attn"
    assert kb.by_distribution("cupy-cuda12x").name == "cupy"
    assert kb.by_import("onnxruntime") is None  # shared with the CPU build: only requirements are flagged
    assert kb.by_distribution("onnxruntime-gpu").name == "onnxruntime-gpu"
