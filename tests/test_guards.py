"""converter/guards.py: what a test says about a device being there, and which code runs only with one; and
the cpu target leaving such code alone (it never runs on the CPU): yolov5's select_device and autobatch."""
import ast

import pytest

from torchport.converter.guards import device_answer, runs_only_with_device
from torchport.converter.run import Converter

CASES = '''\
import torch
if torch.cuda.is_available():
    torch.cuda.X()  # yes
else:
    torch.cuda.X()  # no
if not torch.cuda.is_available():
    torch.cuda.X()  # no
else:
    torch.cuda.X()  # yes
def f(device, cpu):
    torch.cuda.X()  # no
    if device.type == "cpu":
        return 1
    torch.cuda.X()  # yes
def g(cpu, flag):
    if not cpu and torch.cuda.is_available():
        for i in range(2):
            torch.cuda.X()  # yes
    y = torch.cuda.X() if torch.cuda.device_count() > 1 else 0  # yes
    z = torch.cuda.X() if torch.cuda.device_count() == 0 else 0  # no
    if not torch.cuda.is_available():
        print("no exit")
    torch.cuda.X()  # no
    while torch.npu.is_available():
        torch.cuda.X()  # yes
        break
    else:
        torch.cuda.X()  # no
    if torch.cuda.is_available() or flag:
        torch.cuda.X()  # no
    if flag and not torch.cuda.is_available():
        raise SystemExit
    torch.cuda.X()  # yes
def h():
    if not torch.cuda.is_available():
        sys.exit(1)
    torch.cuda.X()  # yes
    def inner():
        torch.cuda.X()  # no
'''


def test_runs_only_with_device_reads_tests_branches_and_early_exits():
    tree = ast.parse(CASES)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    lines = CASES.splitlines()
    seen = []
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and getattr(n.func, "attr", "") == "X":
            expected = lines[n.lineno - 1].rsplit("# ", 1)[1] == "yes"
            seen.append(n.lineno)
            assert runs_only_with_device(parents, n) is expected, lines[n.lineno - 1]
    assert len(seen) == 16


@pytest.mark.parametrize("test, answer", [
    ("torch.cuda.is_available()", True), ("not torch.cuda.is_available()", False),
    ("torch.cuda.device_count() > 1", True), ("torch.cuda.device_count() >= 1", True),
    ("torch.cuda.device_count() >= 0", None), ("torch.cuda.device_count() == 0", False),
    ("torch.cuda.device_count() < 1", False), ("torch.cuda.device_count() != 0", True),
    ("a and torch.cuda.is_available()", True), ("a or torch.cuda.is_available()", None),
    ("torch.cuda.is_available() and not torch.cuda.is_available()", None),
    ("device.type == 'cpu'", False), ("'cpu' != d.type", True), ("device.type == 'cuda'", None),
    ("x.is_available", None), ("cpu", None)])
def test_device_answer(test, answer):
    assert device_answer(ast.parse(test, mode="eval").body) is answer


YOLOV5_SHAPES = '''\
import torch


def select_device(device=''):
    cpu = device == 'cpu'
    if not cpu and torch.cuda.is_available():
        for i, d in enumerate(device.split(',')):
            p = torch.cuda.get_device_properties(i)
            print(p.name)
        return torch.device('cuda:0')
    return torch.device('cpu')


def autobatch(model, batch_size=16):
    device = next(model.parameters()).device
    if device.type == 'cpu':
        return batch_size
    properties = torch.cuda.get_device_properties(device)
    return int(properties.total_memory / 1e9)


def profile():
    return torch.cuda.get_device_properties(0)
'''


def test_cpu_target_leaves_code_that_runs_only_with_a_device():
    """On the cpu target these branches never run, so nothing there "would fail"; the same call outside any
    guard (profile) still does. On npu the guarded calls run on the device and are converted as before."""
    new, findings, _ = Converter("cpu").convert_text("u.py", YOLOV5_SHAPES.encode(), "python")
    unsupported = [(f.line, f.old) for f in findings if f.action == "unsupported"]
    assert unsupported == [(23, "torch.cuda.get_device_properties")], findings
    namespace: dict = {}
    exec(compile(new or YOLOV5_SHAPES.encode(), "u.py", "exec"), namespace)   # the CPU path runs
    import torch

    model = torch.nn.Linear(2, 2)
    assert namespace["autobatch"](model) == 16 and namespace["select_device"]("").type == "cpu"
    _, npu, _ = Converter("npu").convert_text("u.py", YOLOV5_SHAPES.encode(), "python")
    assert not [f for f in npu if f.action == "unsupported"]
