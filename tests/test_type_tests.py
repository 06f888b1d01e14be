"""A type test through a name (converter/rules/api.py type_test): `types = (DataParallel, DDP)` read only by
`isinstance(x, types)` (YOLOX ema.py) is not a use of DataParallel; any other read or binding of the name is."""
import ast

import pytest

from torchport.converter.rules import api
from torchport.converter.run import Converter, kind_of

YOLOX_EMA = '''import torch.nn as nn

__all__ = ["ModelEMA", "is_parallel"]


def is_parallel(model):
    """check if model is in parallel mode."""
    parallel_type = (
        nn.parallel.DataParallel,
        nn.parallel.DistributedDataParallel,
    )
    return isinstance(model, parallel_type)
'''


def _reported(text: str, target: str = "mlu") -> list:
    """Lines where convert reports DataParallel (TP112)."""
    _, findings, _ = Converter(target).convert_text("m.py", text.encode(), kind_of("m.py"))
    return sorted(f.line for f in findings if f.rule == "TP112")


def test_yolox_is_parallel_is_a_type_test():
    assert _reported(YOLOX_EMA) == []


@pytest.mark.parametrize("form", [
    "PARALLEL = (nn.DataParallel,)\ndef f(m):\n    return isinstance(m, PARALLEL)\n",
    "PARALLEL: tuple = (nn.DataParallel,)\ndef f(m):\n    return issubclass(type(m), (PARALLEL, nn.Linear))\n",
    "def f(m):\n    kinds = [nn.DataParallel]\n    return type(m) in kinds\n",
    "def f(m):\n    kinds = {nn.DataParallel}\n    return m.__class__ not in kinds\n",
    "def f(m, c):\n    kinds = (nn.DataParallel,) if c else (nn.DataParallel, nn.Linear)\n"
    "    return isinstance(m, kinds)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    dict(kinds=1)\n    return isinstance(m, kinds)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    return any(isinstance(x, kinds) for x in m)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    kinds += (nn.Linear,)\n    return isinstance(m, kinds)\n",
    # accelerate 1.15.0 utils/other.py:294 (extract_model_from_parallel): more types when a package is there
    "def f(model):\n    options = (nn.parallel.DistributedDataParallel, nn.DataParallel)\n"
    "    if hasattr(nn, 'Other'):\n        options += (nn.Other,)\n    while isinstance(model, options):\n"
    "        model = model.module\n    return model\n",
])
def test_a_name_read_only_in_type_tests_is_not_a_use(form):
    assert _reported("import torch.nn as nn\n" + form) == []


@pytest.mark.parametrize("form", [
    "def f(m):\n    kinds = (nn.DataParallel,)\n    kinds = kinds + (nn.Linear,)\n    return isinstance(m, kinds)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    kinds += other\n    return isinstance(m, kinds)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    kinds -= {nn.Linear}\n    return isinstance(m, kinds)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    print(kinds)\n    return isinstance(m, kinds)\n",
    "def f():\n    kinds = (nn.DataParallel,)\n    return kinds\n",
    "def f(m):\n    kinds = [nn.DataParallel]\n    return kinds[0](m)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    del kinds\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    return isinstance(m, (*kinds, nn.Linear))\n",
    "def f(m):\n    kinds = (nn.DataParallel,)\n    def g():\n        nonlocal kinds\n        kinds = ()\n"
    "    g()\n    return isinstance(m, kinds)\n",
    "def f(m):\n    a = b = (nn.DataParallel,)\n    return isinstance(m, a) and isinstance(m, b)\n",
    "KINDS = (nn.DataParallel,)\ndef f():\n    global KINDS\n    KINDS = ()\n"
    "def g(m):\n    return isinstance(m, KINDS)\n",
    "__all__ = ['KINDS']\nKINDS = (nn.DataParallel,)\ndef g(m):\n    return isinstance(m, KINDS)\n",
    "KINDS = (nn.DataParallel,)\ndef g(m):\n    return isinstance(m, globals()['KINDS'])\n",
    "class C:\n    KINDS = (nn.DataParallel,)\n    def g(self, m):\n        return isinstance(m, self.KINDS)\n",
    "KINDS = (nn.DataParallel,)\ndef g(m, KINDS=KINDS):\n    return isinstance(m, KINDS)\n",
])
def test_any_other_read_or_binding_of_the_name_keeps_it_a_use(form):
    assert _reported("import torch.nn as nn\n" + form) != []


def test_each_scope_is_walked_once(monkeypatch):
    """Many tuples in one module: one walk of the module and one of each function, not one per reference."""
    walked = []
    names_in = api._names_in
    monkeypatch.setattr(api, "_names_in", lambda scope: walked.append(scope) or names_in(scope))
    module = "".join(f"K{i} = (nn.DataParallel,)\n" for i in range(30))
    functions = "".join(f"def f{i}(m):\n    k = (nn.DataParallel, nn.DataParallel)\n"
                        f"    return isinstance(m, k) or isinstance(m, K{i})\n" for i in range(30))
    assert _reported("import torch.nn as nn\n" + module + functions) == []
    assert [type(s) for s in walked].count(ast.Module) == 1
    assert sorted(s.name for s in walked if isinstance(s, ast.FunctionDef)) == sorted(f"f{i}" for i in range(30))


# ---- names imported by `from ... import`: decided with the import (rules/imports.py finalize_bindings)
IMPORTED = "from torch.nn import DataParallel\nfrom torch.nn.parallel import DistributedDataParallel as DDP\n"


def _findings(text: str, target: str) -> list:
    """(line, action) of every DataParallel finding (TP112)."""
    _, findings, _ = Converter(target).convert_text("m.py", text.encode(), kind_of("m.py"))
    return sorted((f.line, f.action) for f in findings if f.rule == "TP112")


@pytest.mark.parametrize("target", ["npu", "mlu", "cpu"])
@pytest.mark.parametrize("form", [
    "def unwrap(m):\n    return m.module if isinstance(m, (DataParallel, DDP)) else m\n",
    "def f(m):\n    return type(m) is DataParallel\n",
    "def f(m):\n    return type(m) in (DataParallel, DDP)\n",
    "def f(c):\n    return issubclass(c, DataParallel)\n",
    "KINDS = (DataParallel, DDP)\ndef f(m):\n    return isinstance(m, KINDS)\n",
    "def f(m):\n    from torch.nn import DataParallel as W\n    return isinstance(m, W) or isinstance(m, DataParallel)\n",
])
def test_an_imported_name_read_only_in_type_tests_is_not_reported(form, target):
    """Like `isinstance(m, nn.DataParallel)`: mlu lacks DataParallel (unsupported), npu and cpu keep it (advice);
    neither the import nor the type test is reported."""
    assert _findings(IMPORTED + form, target) == []


def test_an_import_in_a_function_read_only_in_type_tests_is_not_reported():
    text = "def f(m):\n    from torch.nn.parallel import DataParallel as DP\n    return isinstance(m, DP)\n"
    assert _findings(text, "mlu") == []


def test_an_imported_name_never_read_keeps_its_import_reported():
    """Another module may import it from here."""
    assert _findings(IMPORTED, "mlu") == [(1, "unsupported")]


@pytest.mark.parametrize("form", [
    "__all__ = ['DataParallel']\n",
    "print(DataParallel)\n",
    "DataParallel = None\n",
    "del DataParallel\n",
    "def g():\n    global DataParallel\n",
    "W = [DataParallel]\n",
    "class W(DataParallel):\n    pass\n",
    "x = DataParallel.forward\n",
    "def g(m):\n    from torch.nn import DataParallel\n    return isinstance(m, DataParallel)\n",
])
def test_any_other_mention_of_an_imported_name_keeps_its_import_reported(form):
    text = IMPORTED + "def f(m):\n    return isinstance(m, DataParallel)\n" + form
    assert (1, "unsupported") in _findings(text, "mlu")
    assert (1, "advice") in _findings(text, "cpu")


def test_a_call_reports_the_import_and_the_call_not_the_type_test():
    text = IMPORTED + "def f(m):\n    if isinstance(m, (DataParallel, DDP)):\n        return m\n    return DataParallel(m)\n"
    assert _findings(text, "mlu") == [(1, "unsupported"), (6, "unsupported")]
    assert _findings(text, "cpu") == [(1, "advice")]


def test_a_name_bound_in_a_class_body_is_read_as_an_attribute():
    """`self.DataParallel(m)` is no reference to the import: the class body's own type test does not decide it."""
    text = "class C:\n    from torch.nn import DataParallel\n    WRAPPED = isinstance(1, DataParallel)\n" \
           "    def f(self, m):\n        return self.DataParallel(m)\n"
    assert _findings(text, "mlu") == [(2, "unsupported")]


# ---- a literal looped over by a variable that is only type-tested (pytorch-metric-learning save_model)
PML_SAVE_MODEL = '''import torch


def save_model(model, filepath):
    if any(
        isinstance(model, x)
        for x in [torch.nn.DataParallel, torch.nn.parallel.DistributedDataParallel]
    ):
        torch.save(model.module.state_dict(), filepath)
    else:
        torch.save(model.state_dict(), filepath)
'''


@pytest.mark.parametrize("target", ["npu", "mlu", "cpu"])
def test_pml_save_model_is_a_type_test(target):
    assert _reported(PML_SAVE_MODEL, target) == []


LOOPED = [
    "def f(m):\n    return any(isinstance(m, x) for x in (nn.DataParallel, nn.Linear))\n",
    "def f(m):\n    return [m for x in {nn.DataParallel} if issubclass(type(m), (x, nn.Linear))]\n",
    "def f(ms):\n    return {m: type(m) is t for t in [nn.DataParallel] for m in ms}\n",
    "def f(m):\n    for t in (nn.DataParallel, nn.Linear):\n        if isinstance(m, t):\n            return True\n"
    "    return False\n",
    "for t in [nn.DataParallel]:\n    if type(1) == t:\n        print(1)\n",
    "async def f(m, s):\n    async for t in s:\n        pass\n    return all(not isinstance(m, t) for t in [nn.DataParallel])\n",
]


@pytest.mark.parametrize("form", LOOPED)
def test_a_literal_looped_by_a_type_tested_variable_is_not_a_use(form):
    assert _reported("import torch.nn as nn\n" + form) == []


@pytest.mark.parametrize("form", [
    "def f(m):\n    return any(x(m) for x in [nn.DataParallel])\n",
    "def f(m):\n    return [x for x in [nn.DataParallel] if isinstance(m, x)]\n",
    "def f(m):\n    return any(isinstance(m, x) and print(x) for x in [nn.DataParallel])\n",
    "def f(m):\n    return any(isinstance(m, x) for x in [nn.DataParallel] if (x := m))\n",
    "def f(m):\n    return any(isinstance(m, x) for x in [nn.DataParallel] for x in [m])\n",
    "def f(m):\n    return any(isinstance(m, x) for x, y in [(nn.DataParallel, 1)])\n",
    "def f(m):\n    return any(True for x in [nn.DataParallel])\n",
    "def f(m):\n    for t in [nn.DataParallel]:\n        if isinstance(m, t):\n            break\n    return t(m)\n",
    "def f(m):\n    for t in [nn.DataParallel]:\n        m = t(m)\n    return m\n",
    "def f(m):\n    for t in [nn.DataParallel]:\n        pass\n",
    "def f(m):\n    t = 1\n    for t in [nn.DataParallel]:\n        isinstance(m, t)\n",
    "class C:\n    for t in [nn.DataParallel]:\n        OK = isinstance(1, t)\n",
    "def f(m):\n    for t in [nn.DataParallel]:\n        isinstance(m, t)\n    else:\n        return t\n",
])
def test_a_loop_variable_used_otherwise_keeps_the_literal_a_use(form):
    assert _reported("import torch.nn as nn\n" + form) != []


@pytest.mark.parametrize("target", ["npu", "cpu"])
@pytest.mark.parametrize("form", [
    "def f(m):\n    return any(isinstance(m, x) for x in [DataParallel, DDP])\n",
    "def f(m):\n    for t in (DataParallel, DDP):\n        if isinstance(m, t):\n            return m.module\n    return m\n",
])
def test_an_imported_name_looped_for_type_tests_is_not_reported(form, target):
    assert _findings(IMPORTED + form, target) == []


def test_an_imported_name_looped_and_called_keeps_its_import_reported():
    text = IMPORTED + "def f(m):\n    return [t(m) for t in [DataParallel, DDP]]\n"
    assert (1, "unsupported") in _findings(text, "mlu")


def test_a_call_reports_the_import_and_the_call_not_the_looped_type_test():
    text = "from torch.nn import DataParallel\ndef f(m):\n    if any(isinstance(m, x) for x in [DataParallel]):\n" \
           "        return m\n    return DataParallel(m)\n"
    assert _findings(text, "mlu") == [(1, "unsupported"), (5, "unsupported")]
