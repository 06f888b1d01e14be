"""converter/flow.reaching_value: the value a name or dotted attribute holds where it is read, and the rules
that read through it (device guards: tests/test_guards.py; TP705 on a variable holding device properties)."""
import ast

import pytest

from torchport.converter.flow import reaching_value
from torchport.converter.run import Converter

SOURCE = '''\
import torch
A = 1
def f(p, q):
    x = 2
    y = 3
    if p:
        y = 4
    z = 5
    z = 6
    for i in q:
        w = 7
        use(x, y, z, w, p, A, i)
    x = 8
    self.k = 9
    use(self.k, self.m, B)
class C:
    def __init__(self):
        self.m = 10
B = 11
B = 12
'''


@pytest.mark.parametrize("name, expected", [
    ("x", 2), ("y", None), ("z", 6), ("w", 7), ("p", None), ("A", 1), ("i", None),
    ("self.k", 9), ("self.m", 10), ("B", None)])
def test_the_value_that_reaches_each_read(name, expected):
    """y is bound in a branch, p is a parameter, i a loop variable, B bound twice in the module: nothing told."""
    tree = ast.parse(SOURCE)
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
    reads = [a for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "use"
             for a in n.args if ast.unparse(a) == name]
    assert reads, name
    for read in reads:
        value = reaching_value(parents, read)
        assert (value.value if isinstance(value, ast.Constant) else value) == expected, name


PROPERTIES = '''\
import torch


def capable(i):
    props = torch.cuda.get_device_properties(i)
    print(props.name, props.total_memory)
    return props.major >= 8 and props.minor >= 0


class Model:
    def __init__(self):
        self.props = torch.cuda.get_device_properties(0)

    def blocks(self):
        return self.props.multi_processor_count


def given(props):
    return props.major
'''


@pytest.mark.parametrize("target", ["npu", "mlu", "musa", "xpu", "mps"])
def test_capability_fields_read_through_a_variable_are_reported(target):
    """Before: `props = torch.cuda.get_device_properties(i)` then `props.major` was not TP705 (only the
    chained `get_device_properties(0).major` was), so migrate did not list it. A parameter tells nothing."""
    _, findings, _ = Converter(target).convert_text("m.py", PROPERTIES.encode(), "python")
    assert sorted((f.line, f.old.rsplit(".", 1)[-1]) for f in findings if f.rule == "TP705") == \
        [(7, "major"), (7, "minor"), (15, "multi_processor_count")], findings
