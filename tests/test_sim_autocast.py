"""Autocast on the simulated devices follows each vendor's own op lists (kb/sim/autocast/<target>.json).

The data's shape and provenance are checked without torch; the behaviour under `torchport sim`, where every
vendor bans binary_cross_entropy and npu's hand-written list leaves upsampling in fp16 while mlu's and musa's
(PyTorch 2.4.1's and 2.7.1's macro lists) cast it to fp32.
"""
import json
import os
import re
import sys

import pytest
from conftest import ROOT, run_program

from torchport.sim import autocast

VENDORS = ["npu", "mlu", "musa"]
PROBE = ROOT / "tests" / "fixtures" / "sim" / "autocast_probe.py"
SOURCE = re.compile(r"^[\w/.]+\.(cpp|h):\d+( AT_FORALL_\w+ <- pytorch/pytorch@v[\d.]+ aten/src/ATen/autocast_mode\.h:\d+)?$")


@pytest.mark.parametrize("target", VENDORS)
def test_autocast_data_is_well_formed_and_cited(target):
    data = autocast.load(target)
    assert data["target"] == target
    assert re.fullmatch(r"[0-9a-f]{40}", data["vendor"]["commit"]) and data["vendor"]["repo"] and data["vendor"]["path"]
    ops = [e["op"] for e in data["ops"]]
    assert len(ops) == len(set(ops)), "one policy per op"
    for e in data["ops"]:
        assert e["policy"] in autocast.POLICIES, e
        assert SOURCE.match(e["source"]), e
        assert e["source"].startswith(data["vendor"]["path"] + ":")
    policies = autocast.policies(target)
    assert policies["binary_cross_entropy"] == "banned"
    assert data["banned_message"].startswith("torch.nn.functional.binary_cross_entropy and torch.nn.BCELoss "
                                             "are unsafe to autocast.\n")
    assert policies["mm"] == policies["linear"] == policies["conv2d"] == "lower_precision_fp"
    assert policies["layer_norm"] == "fp32" and policies["softmax.int"] == "fp32_set_opt_dtype"
    assert "rms_norm" not in policies   # only torch 2.8+ lists it; no vendor here builds against one


def test_npu_list_is_its_own_and_the_others_expand_their_torchs_macros():
    npu, mlu, musa = (autocast.load(t) for t in VENDORS)
    assert npu["torch"] is None, "AutoCastOps.cpp lists every op itself"
    assert not any(op.startswith(("upsample", "_upsample")) or op in ("linalg_vecdot", "vdot")
                   for op in autocast.policies("npu"))
    for data, version in ((mlu, "2.4.1"), (musa, "2.7.1")):
        assert data["torch"]["version"] == version and data["torch"]["version_source"]
        assert re.fullmatch(r"[0-9a-f]{64}", data["torch"]["sha256"])
        assert autocast.policies(data["target"])["upsample_nearest2d"] == "fp32"
    assert autocast.policies("mlu")["cudnn_convolution"] == "lower_precision_fp"          # mlu's own extra
    assert autocast.policies("musa")["convolution_overrideable"] == "lower_precision_fp"  # musa's own extra


@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.parametrize("target", VENDORS)
def test_autocast_on_the_simulated_device_follows_the_vendors_list(target):
    p = run_program([sys.executable, "-m", "torchport", "sim", "--to", target, "--", sys.executable, str(PROBE)],
                    env=dict(os.environ), capture_output=True, text=True, timeout=600)
    assert p.returncode == 0, p.stderr
    facts = json.loads(p.stdout.split("AUTOCAST ", 1)[1])
    message = autocast.load(target)["banned_message"]
    assert facts["binary_cross_entropy"] == facts["BCELoss"] == f"RuntimeError: {message}"
    assert facts["bce_outside"] == "torch.float32", "outside autocast BCE runs"
    dtypes = facts["dtypes"]
    assert dtypes["mm"] == dtypes["linear"] == dtypes["conv2d"] == "torch.float16"
    for op in ("softmax", "layer_norm", "sum", "norm", "addcmul"):
        assert dtypes[op] == "torch.float32", op
    assert dtypes["relu"] == dtypes["rms_norm"] == "torch.float16", "unlisted ops run in the dtype they are given"
    assert dtypes["interpolate"] == ("torch.float16" if target == "npu" else "torch.float32")
    step = facts["step"]
    assert step["finite"] and step["moved"] and step["scale"] > 0 and step["loss_dtype"] == "torch.float32"
    assert step["grad_dtype"] == "torch.float32"
    registered = facts["autocast"]
    assert registered["registered"] + len(registered["skipped"]) == len(autocast.load(target)["ops"])
    if target == "musa":   # its own SDPA kernels are not ops of this torch
        assert "_scaled_dot_product_attention_math_musa" in registered["skipped"]


@pytest.mark.torch
def test_cpu_autocast_runs_binary_cross_entropy():
    """The cpu target's autocast is PyTorch's own, which lists BCE as an fp32 op rather than banning it."""
    import torch
    import torch.nn.functional as F

    x = torch.rand(4, 4)
    with torch.autocast("cpu", dtype=torch.bfloat16):
        loss = F.binary_cross_entropy(torch.sigmoid(x @ x), torch.rand(4, 4))
    assert loss.dtype == torch.float32


HEADER = """\
#define AT_FORALL_FP32(_) \\
  _(acos)                 \\
  _(pow, Tensor_Scalar)

#define AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(_) \\
  _(ADD_NS(norm),                                   \\
    "norm.Scalar",                                  \\
    Tensor(const Tensor&, const Scalar&),           \\
    Tensor(const Tensor&, ScalarType),              \\
    fp32_append_dtype)
"""
VENDOR = """\
Tensor bce_banned(const Tensor&, int64_t) {
  AT_ERROR("unsafe to "
           "autocast.\\n"
           "use logits");
}
TORCH_LIBRARY_IMPL(_, AutocastPrivateUse1, m) { m.fallback(torch::CppFunction::makeFallthrough()); }
TORCH_LIBRARY_IMPL(aten, AutocastPrivateUse1, m) {
  KERNEL_X(mm, lower_precision_fp)
  // KERNEL_X(norm, ScalarOpt_dtype, fp32_set_opt_dtype)
#define _FP32(...) \\
  KERNEL_X(__VA_ARGS__, fp32)
  AT_FORALL_FP32(_FP32)
  AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE(KERNEL_DIFFERENT_X)
  KERNEL_X(conv_transpose2d, input, lower_precision_fp)
  m.impl(TORCH_SELECTIVE_NAME("aten::binary_cross_entropy"),
         TORCH_FN((&bce_banned)));
}
"""


def test_extractor_reads_kernels_macro_lists_and_the_banned_message():
    sys.path.insert(0, str(ROOT / "tools"))
    import extract_autocast

    ops, message = extract_autocast.extract(VENDOR, "v/autocast.cpp", HEADER, "torch@v9 autocast_mode.h")
    assert message == "unsafe to autocast.\nuse logits"
    assert [(e["op"], e["policy"], e["source"]) for e in ops] == [
        ("mm", "lower_precision_fp", "v/autocast.cpp:8"),
        ("acos", "fp32", "v/autocast.cpp:12 AT_FORALL_FP32 <- torch@v9 autocast_mode.h:2"),
        ("pow.Tensor_Scalar", "fp32", "v/autocast.cpp:12 AT_FORALL_FP32 <- torch@v9 autocast_mode.h:3"),
        ("norm.Scalar", "fp32_append_dtype",
         "v/autocast.cpp:13 AT_FORALL_DIFFERENT_REDISPATCH_SIGNATURE <- torch@v9 autocast_mode.h:6"),
        ("conv_transpose2d.input", "lower_precision_fp", "v/autocast.cpp:14"),
        ("binary_cross_entropy", "banned", "v/autocast.cpp:15"),
    ]
