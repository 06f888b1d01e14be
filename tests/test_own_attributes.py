"""A class of the project's own with a `cuda`, `is_cuda` or `record_stream` of its own (rules/methods.py,
`own_attribute`): its uses through self, cls, the class and the objects the file builds from it are not renamed
as a tensor's or a module's (ring-attention-pytorch 0.5.20, ring_attention.py:143: `self.is_cuda` became
`self.is_npu`, an AttributeError at run time); what may be a tensor still is."""
import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchport.backends import available_targets, load_target
from torchport.converter.run import Converter

# the new-user trial's repro: RingRotaryEmbedding's is_cuda property
ROTARY = '''\
import torch
from torch import nn

class Rotary(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("inv_freq", torch.ones(4))

    @property
    def is_cuda(self):
        return self.inv_freq.is_cuda

    def forward(self, n):
        buckets = 1 if self.is_cuda else 4
        return torch.arange(n // buckets, device=self.inv_freq.device)

print(Rotary().cuda()(8))
'''
DEVICE_TARGETS = [t for t in available_targets() if not load_target(t).host]


def convert(text: str, target: str = "npu"):
    new, findings, _ = Converter(target).convert_text("a.py", text.encode(), "python")
    return (new.decode() if new is not None else text), findings


@pytest.mark.parametrize("target", DEVICE_TARGETS)
def test_a_class_own_is_cuda_is_kept_and_said_once_where_it_is_defined(target):
    text, findings = convert(ROTARY, target)
    assert "buckets = 1 if self.is_cuda else 4" in text
    assert "return self.inv_freq.is_cuda" not in text            # the buffer's is a tensor's
    said = [f for f in findings if f.rule == "TP502" and f.action == "advice"]
    assert [(f.line, f.old) for f in said] == [(10, "def is_cuda(self):")]
    assert "Rotary.is_cuda is the class's own property" in said[0].message
    again, findings = convert(text, target)                      # check on the output: nothing more to change
    assert again == text and not [f for f in findings if f.is_change]


SHAPES = '''\
import torch
from torch import nn


class Base(nn.Module):
    def __init__(self):
        super().__init__()
        self.is_cuda = False


class Child(Base):
    def ready(self, x):
        return self.is_cuda and x.is_cuda


class Plain(nn.Module):
    def move(self):
        return self.cuda(), super().cuda()


class Holder:
    def __init__(self, t):
        self.t = t

    def cuda(self):
        self.t = self.t.cuda()
        return self


class User(nn.Module):
    def __init__(self):
        super().__init__()
        self.held = Holder(torch.ones(1))

    def go(self):
        return self.held.cuda(), self.held.t.is_cuda


def mixed(flag):
    thing = Holder(torch.ones(1)) if flag else torch.ones(1)
    return thing.cuda(), Child().eval().is_cuda
'''


def test_what_may_be_a_tensor_or_a_module_is_still_converted():
    text, findings = convert(SHAPES)
    assert "return self.is_cuda and x.is_npu" in text           # inherited own attribute; a parameter
    assert "return self.npu(), super().npu()" in text           # a module without a cuda of its own
    assert "self.t = self.t.npu()" in text                       # inside the class's own cuda()
    assert "return self.held.cuda(), self.held.t.is_npu" in text  # self.held is a Holder; its .t is not
    assert "return thing.npu(), Child().eval().is_cuda" in text  # thing may be a tensor; eval() returns the Child
    said = sorted((f.line, f.rule) for f in findings if f.action == "advice")
    assert said == [(8, "TP502"), (25, "TP501")]                 # where Base and Holder give them, once each


def test_record_stream_of_a_class_of_its_own_is_kept_on_the_cpu():
    text, findings = convert("import torch\n\nclass Batch:\n    def record_stream(self, s):\n"
                             "        self.x.record_stream(s)\n\nBatch().record_stream(None)\n", "cpu")
    assert "        pass\n" in text and "Batch().record_stream(None)" in text
    assert [(f.line, f.action) for f in findings if f.rule == "TP504"] == [(4, "advice"), (5, "modify")]


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_the_converted_repro_runs(tmp_path, target):
    """cpu: the CPU branch (4 buckets), as the original takes on a CPU; npu (simulated): the device's branch (one
    bucket), as the original takes on CUDA, where before the fix it stopped at `self.is_npu`."""
    out = tmp_path / "r4.py"
    out.write_text(convert(ROTARY, target)[0])
    command = [sys.executable, str(out)]
    if target != "cpu":
        command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--", *command]
    src = str(Path(__file__).resolve().parents[1] / "src")
    p = subprocess.run(command, capture_output=True, text=True, timeout=300, env={**os.environ, "PYTHONPATH": src})
    assert p.returncode == 0, p.stderr[-2000:]
    expected = "tensor([0, 1])" if target == "cpu" else "tensor([0, 1, 2, 3, 4, 5, 6, 7], device='npu:0')"
    assert p.stdout.strip() == expected
