"""TP210: a question whether CUDA is there stays CUDA's when what it guards calls a name the target lacks, so
the target never runs that call: the branch of an if or conditional, and the operands after it in an `and`."""
import pytest

from torchport.converter.run import Converter

SOURCE = '''import torch
if torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0):
    print("ampere")
ok = torch.cuda.is_available() and torch.cuda.get_device_capability()[0] >= 8
if torch.cuda.is_available() and torch.cuda.device_count() > 1:
    print("more than one")
if torch.cuda.is_available():
    print(torch.cuda.get_arch_list())
'''


@pytest.mark.parametrize("target", ["npu", "mlu", "musa", "xpu"])
def test_a_question_before_a_call_the_target_lacks_is_kept(target):
    """Before: `torch.cuda.is_available() and torch.cuda.get_device_capability() >= (8, 0)` became
    `torch.npu.is_available() and torch.cuda.get_device_capability() ...`, which raised on the NPU where the
    original's `and` stopped at the question (accelerate 1.15.0 test_utils/testing.py)."""
    new, findings, _ = Converter(target).convert_text("m.py", SOURCE.encode(), "python")
    lines = new.decode().splitlines()
    body = lines[1:] if lines[1].startswith("import torch_") else lines   # the registration import, if any
    unsupported = {f.line for f in findings if f.rule != "TP210" and f.action == "unsupported"}
    kept = sorted(f.line for f in findings if f.rule == "TP210")
    for line in (2, 4, 7):
        # kept where a call the target lacks follows the question (or is in its branch)
        question_kept = body[line - 1].count("torch.cuda.is_available()") == 1
        assert question_kept == (line in unsupported or line + 1 in unsupported), (target, body[line - 1])
    assert f"torch.{target}.is_available() and torch.{target}.device_count() > 1" in body[4]
    assert kept == sorted(x for x in (2, 4, 7) if x in unsupported or x + 1 in unsupported)
    if target == "npu":   # torch_npu has neither get_device_capability's numbers nor get_arch_list
        assert kept == [2, 4, 7]


PRIVATE = '''import torch
if torch.cuda.is_available():
    assert not torch._C._cuda_isInBadFork()
n = torch._C._cuda_getDeviceCount()
k = torch._C._cuda_isCurrentStreamCapturing()
from torch._C import _nccl_version
'''


@pytest.mark.parametrize("target", ["npu", "mlu", "musa", "xpu", "mps", "cpu"])
def test_private_cuda_bindings_of_torch_c_are_reported(target):
    """Before: torch._C._cuda_isInBadFork (accelerate's notebook test) was no finding, and its branch's question
    became torch.npu.is_available(), so the NPU ran it: AttributeError. Now it is unsupported (kb/cuda_names.toml,
    a `*` key), and the question guarding it is kept; one the CPU build carries is to review."""
    _, findings, _ = Converter(target).convert_text("m.py", PRIVATE.encode(), "python")
    got = {(f.line, f.rule, f.action) for f in findings if f.rule in ("TP115", "TP210")}
    expected = {(4, "TP115", "unsupported"), (5, "TP115", "advice"), (6, "TP115", "unsupported")}
    if target != "cpu":   # on the host the guarded line never runs, and the question is kept anyway
        expected |= {(2, "TP210", "unsupported"), (3, "TP115", "unsupported")}
    assert got == expected, sorted(got)


@pytest.mark.torch
def test_the_private_binding_data_matches_a_cpu_build_of_torch():
    """The `keep` entries are the torch._C._cuda* names a PyTorch without CUDA carries; the patterns' examples are
    names it lacks (a CUDA build has them)."""
    torch = pytest.importorskip("torch")
    from torchport.kb import catalog

    if torch.cuda.is_available() or torch.version.cuda:
        pytest.skip("needs a PyTorch built without CUDA")
    names = catalog().names
    carried = {q.split(".")[-1] for q, d in names.items() if q.startswith("torch._C._cuda_") and d.kind == "keep"}
    assert carried == {n for n in dir(torch._C) if n.startswith("_cuda")}
    for absent in ("_cuda_isInBadFork", "_cuda_getDeviceCount", "_nccl_version", "_cudnn_version", "_cudart"):
        assert not hasattr(torch._C, absent), absent


DEVICE_TYPE = '''import torch


def sdpa_check(torch_device):
    if "cuda" in torch_device:
        major, _ = torch.cuda.get_device_capability()
        return major
    return None


def add(x, y):
    if x.is_cuda:
        import triton
        return triton
    return x + y


def providers(device):
    if device.type == "cuda":
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    if device.type == "cuda":
        return [device.type]
    return ["CPUExecutionProvider"]
'''


def test_a_device_type_question_is_kept_before_a_call_the_target_lacks_or_a_cuda_library():
    """issue 30 class 3: `"cuda" in torch_device` before torch_npu's get_device_capability (transformers' tests),
    `x.is_cuda` before a Triton kernel, `device.type == "cuda"` before onnxruntime's CUDA provider stay CUDA's
    questions, each reported with why; a device-type question whose branch is plain stays rewritten."""
    new, findings, _ = Converter("npu").convert_text("m.py", DEVICE_TYPE.encode(), "python")
    text = new.decode()
    assert 'if "cuda" in torch_device:' in text and "if x.is_cuda:" in text
    assert text.count('if device.type == "cuda":') == 1 and 'if device.type == "npu":\n        return [device.type]' in text
    kept = {f.line: f.message for f in findings if f.rule == "TP210"}
    assert sorted(kept) == [5, 12, 19], kept
    assert "get_device_capability" in kept[5]
    assert "triton" in kept[12] and "Triton-Ascend" in kept[12]
    assert "onnxruntime" in kept[19] and "CANNExecutionProvider" in kept[19]


PATCHED = '''from unittest.mock import patch
import unittest.mock as um
import torch


def test_x(monkeypatch):
    with patch('torch.cuda.is_available', return_value=False):
        assert not torch.cuda.is_available()
    with um.patch("torch.cuda.device_count", return_value=0):
        pass
    monkeypatch.setattr("torch.cuda.is_available", lambda: False)
    patch("torch.cudaX.is_available")
'''


@pytest.mark.parametrize("target", ["npu", "cpu"])
def test_a_test_that_patches_a_cuda_api_by_name_patches_what_the_converted_code_calls(target):
    """skorch's tests `patch('torch.cuda.is_available', ...)` while the converted library asks torch.npu: the mock
    changed nothing and the test failed ("DID NOT WARN").  The dotted name follows the API map; on cpu the
    question is CUDA's own, so the name stays."""
    new, _, _ = Converter(target).convert_text("t.py", PATCHED.encode(), "python")
    text = new.decode() if new is not None else PATCHED   # cpu: nothing to change (`assert not ...` holds there)
    spelled = "torch.npu" if target == "npu" else "torch.cuda"
    assert f"patch('{spelled}.is_available'" in text and f'um.patch("{spelled}.device_count"' in text
    assert f'monkeypatch.setattr("{spelled}.is_available"' in text and 'patch("torch.cudaX.is_available")' in text
