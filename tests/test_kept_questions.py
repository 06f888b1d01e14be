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
