"""User rule files: Ascend's JSON schema and torchport's own format, with line-precise errors."""
import json

import pytest

from torchport.converter.run import Converter
from torchport.core.errors import UsageError

SRC = b"""import torch
import apex.amp as aa
from mylib import helpers


def f(model, opt, loader_cls):
    model, opt = aa.initialize(model, opt)
    helpers.old_func(1, 2)
    obj.old_func(3)
    loader = loader_cls(dataset, 4, pin_memory_device="cuda")
    torch.utils.data.DataLoader(dataset, pin_memory_device="cuda")
    return old_module_fn()
"""


def convert(tmp_path, rules_text, suffix=".json", target="npu", src=SRC):
    path = tmp_path / f"rules{suffix}"
    path.write_text(rules_text)
    new, findings, _ = Converter(target, [str(path)]).convert_text("m.py", src, "python")
    return (new or src).decode(), findings


def test_ascend_schema(tmp_path):
    rules = {"rules": {
        "FuncNameModifyRule": [{"old_name": "old_func", "new_name": "new_func"},
                               {"old_name": "apex.amp.initialize", "new_name": "torch_npu.npu.amp.initialize"}],
        "ArgsModifyRule": [{"func_name": "loader_cls", "arg_idx": 1, "arg_new": "8"}],
        "ModuleNameModifyRule": [{"old_name": "helpers", "new_name": "npu_helpers", "parent_module": "mylib"}],
    }}
    out, findings = convert(tmp_path, json.dumps(rules, indent=2))
    assert "helpers.new_func(1, 2)" in out or "npu_helpers" in out
    assert "obj.new_func(3)" in out
    assert "loader_cls(dataset, 8, pin_memory_device=\"npu\")" in out
    assert "torch_npu.npu.amp.initialize(model, opt)" in out
    assert "from mylib import npu_helpers as helpers" in out
    ids = {f.rule for f in findings}
    assert "rules:FuncNameModifyRule:1" in ids and "rules:ArgsModifyRule:1" in ids


def test_own_toml_format(tmp_path):
    text = '''
[[rename]]
id = "MY001"
old = "apex.amp.initialize"
new = "mylib.amp_init"

[[unsupported]]
id = "MY002"
name = "mylib.helpers.old_func"
tip = "use new_func"
targets = ["npu"]

[[argument]]
id = "MY003"
call = "torch.utils.data.DataLoader"
keyword = "num_workers"
new = "0"
'''
    out, findings = convert(tmp_path, text, ".toml")
    assert "mylib.amp_init(model, opt)" in out
    assert 'torch.utils.data.DataLoader(dataset, pin_memory_device="npu", num_workers=0)' in out
    unsupported = [f for f in findings if f.action == "unsupported"]
    assert [(f.rule, f.message) for f in unsupported] == [("MY002", "use new_func")]
    out_mlu, findings_mlu = convert(tmp_path, text, ".toml", target="mlu")
    assert not [f for f in findings_mlu if f.rule == "MY002"], "rule limited to npu"


@pytest.mark.parametrize("text,suffix,where,message", [
    ('{\n "rules": {\n  "FuncNameModifyRule": [\n   {"old_name": "a"}\n  ]\n }\n}\n', ".json", ":4", "missing 'new_name'"),
    ('{\n "rules": {\n  "ArgsModifyRule": [\n   {"func_name": "f",\n    "arg_idx": "zero", "arg_new": "1"}]}}', ".json", ":4", "'arg_idx' must be a int"),
    ('{\n "rules": {\n  "Bogus": []\n }\n}', ".json", ":2", "unknown rule kind 'Bogus'"),
    ('{\n "rules": {\n  "FuncNameModifyRule": [\n   {"old_name": "a", "new_name": "b c"}]}}', ".json", ":4", "must be a (dotted) Python name"),
    ('{\n "rules": {,\n}', ".json", ":2", "invalid JSON"),
    ('[[rename]]\nold = "a"\nnew = "b"\n\n[[rename]]\nold = "c"\n', ".toml", ":5", "missing 'new'"),
    ('[[argument]]\ncall = "f"\nnew = "1 +"\nindex = 0\n', ".toml", ":1", "not a Python expression"),
])
def test_errors_name_file_and_line(tmp_path, text, suffix, where, message):
    with pytest.raises(UsageError) as e:
        convert(tmp_path, text, suffix)
    assert f"rules{suffix}{where}" in str(e.value) and message in str(e.value)


def test_the_documented_examples_load_and_apply(tmp_path):
    import re

    from conftest import ROOT

    doc = (ROOT / "docs" / "user-rules.md").read_text()
    blocks = dict((lang, text) for lang, text in re.findall(r"```(json|toml)\n(.*?)```", doc, re.S))
    src = (b"import apex.amp as aa\nimport pynvml\nimport torch\nimport xformers.ops as xops\n"
           b"model = aa.initialize(model)\npynvml.nvmlInit()\ny = xops.memory_efficient_attention(q, k, v)\n"
           b"dl = torch.utils.data.DataLoader(ds)\n")
    out, findings = convert(tmp_path, blocks["toml"], ".toml", src=src)
    assert "model = mypkg.amp_init(model)" in out and "import mypkg" in out
    assert 'torch.utils.data.DataLoader(ds, pin_memory_device="npu")' in out
    assert {"MY001"} <= {f.rule for f in findings}
    assert any(f.action == "unsupported" and "scaled_dot_product_attention" in f.message for f in findings)
    assert any(f.action == "advice" and "NVML" in f.message for f in findings)
    out, findings = convert(tmp_path, blocks["json"], ".json",
                            src=b"import apex.amp\nfrom mylib import helpers\napex.amp.initialize(m)\n"
                                b"make_loader(ds, 4)\nold_func(1)\n")
    assert "mypkg.amp_init(m)" in out and "from mylib import npu_helpers as helpers" in out
    assert "make_loader(ds, 8)" in out and "new_func(1)" in out
