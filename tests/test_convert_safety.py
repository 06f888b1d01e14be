"""A conversion that would write broken Python, or a rule that crashes, fails that file and the run, visibly:
the file is copied unchanged, the report names it, the exit code is 1, and the other files are converted."""
import dataclasses
import json

import pytest
from test_cli import run_cli

import torchport
from torchport.converter.rules import api as reference_rules
from torchport.core import codes

GOOD = "import torch\nx = torch.zeros(2).cuda()\n"


def _tree(tmp_path, files):
    src = tmp_path / "proj"
    src.mkdir()
    for name, text in files.items():
        (src / name).write_text(text)
    return src


def _report(out):
    return json.loads((out.parent / f"{out.name}_report" / "report.json").read_text())


def _patch_reference_checker(monkeypatch, wrap):
    """Replace the checker of references to imported names by `wrap(original_check)` (a torchport bug, simulated)."""
    fn = reference_rules.check_reference
    patched = wrap(fn.checker.check)
    patched.checker = dataclasses.replace(fn.checker, check=patched)
    monkeypatch.setattr(reference_rules, "check_reference", patched)


def _breaking(monkeypatch, bad_text: str):
    """Make a built-in checker write `bad_text` at the end of every statement of loader.py (a torchport bug,
    simulated: rule values from files are validated at load, see test_hostile_values.py)."""
    def wrap(original):
        def breaking(node, ctx):
            if ctx.path == "loader.py" and not getattr(ctx, "_broken", False):
                ctx._broken = True
                ctx.insert(len(ctx.source), bad_text, codes.TP101, "simulated bug")
            return original(node, ctx)
        return breaking
    _patch_reference_checker(monkeypatch, wrap)


def test_output_that_does_not_parse_fails_the_file_and_the_run(tmp_path, monkeypatch):
    src = _tree(tmp_path, {"good.py": GOOD, "loader.py": "import torch\ntorch.cuda.synchronize()\n"})
    _breaking(monkeypatch, "x = (\n")
    out = tmp_path / "out"
    result = torchport.convert(src, "npu", out, jobs=1)
    assert (out / "loader.py").read_bytes() == (src / "loader.py").read_bytes(), "copied unchanged"
    assert ".npu()" in (out / "good.py").read_text(), "the other files are converted"
    files = {r.path: r.status for r in result.files}
    assert files == {"good.py": "converted", "loader.py": "error"}
    assert [f.file for f in result.failed()] == ["loader.py"] and "does not parse" in result.failed()[0].message
    assert "does not parse" in (out.parent / "out_report" / "report.md").read_text()


def test_output_that_parses_but_does_not_compile_fails_too(tmp_path, monkeypatch):
    """`yield` outside a function parses, and fails at import: the check compiles."""
    src = _tree(tmp_path, {"loader.py": "import torch\ntorch.cuda.synchronize()\n"})
    _breaking(monkeypatch, "(yield 1)\n")
    result = torchport.convert(src, "npu", tmp_path / "out", jobs=1)
    assert [f.file for f in result.failed()] == ["loader.py"] and "does not parse" in result.failed()[0].message


@pytest.mark.subprocess
def test_rule_values_that_would_break_the_output_are_refused_before_anything_is_written(tmp_path):
    src = _tree(tmp_path, {"loader.py": "import torch\nl = torch.utils.data.DataLoader(ds, 2,)\n"})
    for body in ('keyword = "class"\nnew = "1"', 'index = 1\nnew = "(yield 1)"'):
        rules = tmp_path / "rules.toml"
        rules.write_text(f'[[argument]]\ncall = "torch.utils.data.DataLoader"\n{body}\n')
        out = tmp_path / "out"
        code, stdout, err = run_cli("convert", str(src), "--to", "npu", "-o", str(out), "--rule", str(rules))
        assert code == 2 and str(rules) in err and len(err.strip().splitlines()) == 1, (stdout, err)
        assert not out.exists()


@pytest.mark.subprocess
def test_a_trailing_comma_or_a_comment_does_not_break_an_added_argument(tmp_path):
    """The user rule of docs/user-rules.md on calls with a trailing comma and a comment holding `(`:
    once this wrote `,,` into Swin's files and the report said 0 errors."""
    src = _tree(tmp_path, {"a.py": "from torch.utils.data import DataLoader\n"
                                   "a = DataLoader(\n    ds,\n    batch_size=2,\n)\n"
                                   "b = DataLoader(ds,  # (shuffled)\n)\n"
                                   "c = DataLoader(x for x in ds)\n"})
    rules = tmp_path / "rules.toml"
    rules.write_text('[[argument]]\ncall = "torch.utils.data.DataLoader"\nkeyword = "pin_memory_device"\n'
                     "new = '\"npu\"'\n")
    out = tmp_path / "out"
    code, stdout, err = run_cli("convert", str(src), "--to", "npu", "-o", str(out), "--rule", str(rules))
    assert code == 0, (stdout, err)
    text = (out / "a.py").read_text()
    assert 'batch_size=2, pin_memory_device="npu",\n)' in text
    assert 'DataLoader(ds, pin_memory_device="npu",  # (shuffled)\n)' in text
    assert 'DataLoader((x for x in ds), pin_memory_device="npu")' in text
    namespace = {"DataLoader": lambda *a, **k: (a, k), "ds": [1, 2]}
    code_only = "".join(line for line in text.splitlines(True) if "import" not in line)
    exec(compile(code_only, "a.py", "exec"), namespace)  # the calls really get the argument
    assert namespace["a"][1] == {"batch_size": 2, "pin_memory_device": "npu"}
    assert namespace["b"][1] == {"pin_memory_device": "npu"}


def test_a_rule_that_crashes_fails_only_its_file(tmp_path, monkeypatch):
    src = _tree(tmp_path, {"good.py": GOOD, "bad.py": "import torch\ntorch.cuda.synchronize()  # boom\n"})
    def wrap(original):
        def crashing(node, ctx):
            if ctx.path == "bad.py":
                raise KeyError("simulated bug")
            return original(node, ctx)
        return crashing
    _patch_reference_checker(monkeypatch, wrap)
    out = tmp_path / "out"
    result = torchport.convert(src, "npu", out, jobs=1)
    by_path = {r.path: r for r in result.files}
    assert by_path["good.py"].status == "converted"
    assert by_path["bad.py"].status == "error"
    assert [f.category for f in result.failed()] == ["converter"]
    assert "KeyError" in result.failed()[0].message
    assert (out / "bad.py").read_bytes() == (src / "bad.py").read_bytes()
    log = (tmp_path / "out_report" / "torchport.log").read_text()
    assert "Traceback" in log and "simulated bug" in log
