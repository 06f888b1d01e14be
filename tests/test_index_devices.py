"""A bare device index (`.to(0)`, `device=0`, `torch.device(0)`) means that device of the current accelerator:
on the cpu target there is none, and torch raises "Cannot access accelerator device when none is available".
convert writes the target's device there; the converted lines run on this CPU."""
import pytest

from torchport.converter.run import Converter

SOURCE = '''import torch
x = torch.zeros(2).to(0)
y = torch.zeros(2, device=0)
d = torch.device(0)
w = x.to(0, non_blocking=True)
v = x.to(torch.float16)
z = torch.ones(1).cuda()
'''


@pytest.mark.torch
def test_the_cpu_target_writes_cpu_for_a_bare_index():
    """Before: check said ok on these lines, and the program failed at the first (lpips' Trainer with
    use_gpu=True, pytorch-tabnet style .to(0))."""
    new, findings, _ = Converter("cpu").convert_text("m.py", SOURCE.encode(), "python")
    out = new.decode()
    for line in ('x = torch.zeros(2).to("cpu")', 'y = torch.zeros(2, device="cpu")', 'd = torch.device("cpu")',
                 'w = x.to("cpu", non_blocking=True)', "v = x.to(torch.float16)"):
        assert line in out
    assert sorted(f.line for f in findings if f.rule == "TP201") == [2, 3, 4, 5]
    torch = pytest.importorskip("torch")
    namespace: dict = {}
    exec(compile(out, "m.py", "exec"), namespace)
    assert namespace["y"].device == torch.device("cpu") and namespace["v"].dtype == torch.float16
    with pytest.raises(RuntimeError, match="Cannot access accelerator device"):
        exec(compile(SOURCE.replace(".cuda()", ""), "m.py", "exec"), {})


def test_a_file_that_never_says_cuda_is_read_for_a_bare_index():
    """The newcomer's repro had no "cuda" in it: the file was not even parsed, and migrate said 0 items."""
    text = "import torch\nm = torch.nn.Linear(2, 2).to(0)\n"
    new, findings, _ = Converter("cpu").convert_text("m.py", text.encode(), "python")
    assert new.decode().endswith('.to("cpu")\n') and [f.rule for f in findings] == ["TP201"]


@pytest.mark.parametrize("target", ["npu", "mlu", "musa", "xpu", "mps"])
def test_device_targets_keep_the_index(target):
    """There the index is the target's device (torch_npu registers the accelerator)."""
    new, findings, _ = Converter(target).convert_text("m.py", SOURCE.encode(), "python")
    assert "to(0)" in new.decode() and "device=0" in new.decode()
    assert not [f for f in findings if f.rule == "TP201"]
