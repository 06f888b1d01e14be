"""Hostile input for `ops check`, `compare` and `profile diff`: every bad file is one line on stderr
naming the file (and the field), exit 2, no traceback; `compare` opens nothing outside the dump
folder; a NaN statistic is a divergence; no CSV cell is a spreadsheet formula."""
import csv
import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.cli import main
from torchport.core.csvfile import FORMULA_START, csv_text, safe_cell

needs_torch = pytest.mark.skipif(importlib.util.find_spec("torch") is None, reason="needs torch")
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
HUGE_INT = "9" * 5000            # longer than Python's int() reads (4300 digits)
WIDE_INT = "9" * 400             # an int, but beyond float range
DEEP = "[" * 100_000 + "]" * 100_000


def refused(capsys, argv, *expected) -> str:
    """Run the CLI: exit 2, one line on stderr that names each of `expected`, no traceback."""
    code = main(argv)
    err = capsys.readouterr().err
    assert code == 2, err
    assert "Traceback" not in err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("torchport: error: "), err
    for text in expected:
        assert text in lines[0], (text, lines[0])
    return lines[0]


# ---------------------------------------------------------------- ops check
OPS_CASES = {  # name: (file bytes, text the message names besides the file)
    "nan": (b'{"aten::add.Tensor": NaN}', "not NaN"),
    "infinity": (b'{"ops": [{"op": "aten::add.Tensor", "count": Infinity}]}', "'count'"),
    "overflowing float": (b'{"aten::add.Tensor": 1e999}', "not Infinity"),
    "huge int": (b'{"aten::add.Tensor": ' + HUGE_INT.encode() + b"}", "number too long"),
    "wide int": (b'{"aten::add.Tensor": ' + WIDE_INT.encode() + b"}", "400-digit"),
    "negative count": (b'{"ops": [{"op": "aten::add.Tensor", "count": -5}]}', "'count'"),
    "fractional count": (b'{"ops": [{"op": "aten::add.Tensor", "count": 2.5}]}', "'count'"),
    "deep nesting": (DEEP.encode(), "nested too deeply"),
    "deep object": (b'{"ops": ' + b'{"a":' * 50_000 + b"1" + b"}" * 50_001, "nested too deeply"),
    "wrong top-level type": (b'"aten::add.Tensor"', "expected a list of ops"),
    "null ops": (b'{"ops": null}', "not null"),
    "count as string": (b'{"ops": [{"op": "aten::add.Tensor", "count": "3"}]}', "'count'"),
    "count as bool": (b'{"aten::add.Tensor": true}', "not true"),
    "modules as string": (b'{"ops": [{"op": "aten::add.Tensor", "modules": "abc"}]}', "'modules'"),
    "modules of objects": (b'{"ops": [{"op": "aten::add.Tensor", "modules": [{}]}]}', "'modules'[0]"),
    "op as number": (b'[3]', "[0]"),
    "latin-1": ('["aten::add.Tensor", "caf\xe9"]'.encode("latin-1"), "not UTF-8"),
    "lone surrogate": (b'["\\ud800"]', "surrogate"),
    "invalid json": (b'["aten::add.Tensor",', "invalid JSON"),
    "empty": (b"", "invalid JSON"),
}


@pytest.mark.parametrize("case", list(OPS_CASES))
def test_ops_check_refuses_hostile_json(tmp_path, capsys, case):
    data, expected = OPS_CASES[case]
    path = tmp_path / "ops.json"
    path.write_bytes(data)
    refused(capsys, ["ops", "check", str(path), "--to", "npu"], str(path), expected)


@pytest.mark.parametrize("encoding", ["utf-8-sig", "utf-16"])
def test_ops_check_reads_a_byte_order_mark(tmp_path, capsys, encoding):
    """A BOM marks the encoding (RFC 8259 lets a parser ignore it): the file is read, not refused."""
    path = tmp_path / "ops.json"
    path.write_text('["aten::add.Tensor"]', encoding=encoding)
    assert main(["ops", "check", str(path), "--to", "npu"]) == 0
    assert "1 supported" in capsys.readouterr().out


def test_ops_check_refuses_a_folder(tmp_path, capsys):
    refused(capsys, ["ops", "check", str(tmp_path), "--to", "npu"], str(tmp_path))


TARGET = 'name = "t"\ntitle = "T"\nnamespace = "torch_t"\ndevice = "t"\n'


@pytest.mark.parametrize("case, text, expected", [
    ("ops names a path", TARGET + 'ops = "../../../../../../tmp/evil"\n', "'ops'"),
    ("ops with a NUL", TARGET + 'ops = "npu\\u0000"\n', "'ops'"),
    ("nan", TARGET + "device_index = nan\n", "'device_index'"),
    ("huge int", TARGET + "device_index = " + HUGE_INT + "\n", "t.toml"),
    ("deep nesting", TARGET + "x = " + DEEP + "\n", "t.toml"),
    ("latin-1", TARGET + 'description = "caf\xe9"\n', "t.toml"),
    ("wrong type", 'name = 3\ntitle = "T"\nnamespace = "n"\ndevice = "t"\n', "'name'"),
    ("names not a table", TARGET + "names = 3\n", "'names'"),
    ("env not a table", TARGET + "env = 3\n", "'env'"),
])
def test_ops_check_refuses_a_hostile_target_file(tmp_path, capsys, case, text, expected):
    """`--to FILE.toml`: the target file is read by backends/ (its checks), its `ops` by kb/operators."""
    (tmp_path / "ops.json").write_text('["aten::add.Tensor"]')
    path = tmp_path / "t.toml"
    path.write_bytes(text.encode("latin-1" if case == "latin-1" else "utf-8"))
    refused(capsys, ["ops", "check", str(tmp_path / "ops.json"), "--to", str(path)], str(path), expected)


def test_op_list_names_only_bundled_files():
    """Whatever checks a target file makes, kb/operators reads nothing but kb/ops/<name>.json."""
    import dataclasses

    from torchport.backends import load_target
    from torchport.core.errors import UsageError
    from torchport.kb.operators import op_list

    for name in ("../../../../etc/passwd", "/etc/passwd", "..", "npu.json/..", "npu\u0000"):
        with pytest.raises(UsageError, match="'ops' must name an op list"):
            op_list(dataclasses.replace(load_target("npu"), ops=name))
    assert op_list(load_target("npu")).ops


# ---------------------------------------------------------------- compare: dumps written by hand
def entry(name="lin", op="aten::addmm.default", output=0, **stats) -> dict:
    e = {"name": f"{name}/{op}/forward/0/{output}", "module": name, "op": op, "phase": "forward", "call": 0,
         "output": output, "step": 0, "dtype": "float32", "shape": [2, 3], "min": -1.0, "max": 2.0, "mean": 0.25,
         "norm": 3.0, "nan": 0, "inf": 0}
    e.update(stats)
    return e


def write_dump(folder, entries, lines=None):
    """A dump folder with rank0/ops.jsonl; `lines` (bytes) replace the JSON of the entries."""
    rank = folder / "rank0"
    rank.mkdir(parents=True, exist_ok=True)
    data = lines if lines is not None else b"".join(json.dumps(e).encode() + b"\n" for e in entries)
    (rank / "ops.jsonl").write_bytes(data)
    return folder


def reference(tmp_path):
    return write_dump(tmp_path / "a", [entry("lin"), entry("act", "aten::relu.default")])


def second_line(text: str) -> bytes:
    """A dump whose second line is `text` (its first line is the reference's)."""
    return json.dumps(entry("lin")).encode() + b"\n" + text.encode("utf-8", "surrogatepass") + b"\n"


ACT = json.dumps(entry("act", "aten::relu.default"))
COMPARE_CASES = {  # name: (ops.jsonl bytes, text the message names besides the file)
    "nan count": (second_line(ACT.replace('"nan": 0', '"nan": NaN')), "'nan'"),
    "infinite count": (second_line(ACT.replace('"inf": 0', '"inf": Infinity')), "'inf'"),
    "huge int": (second_line(ACT.replace('"mean": 0.25', '"mean": ' + HUGE_INT)), "number too long"),
    "wide int statistic": (second_line(ACT.replace('"mean": 0.25', '"mean": ' + WIDE_INT)), "'mean'"),
    "deep nesting": (second_line(DEEP), "nested too deeply"),
    "deep field": (second_line(ACT.replace('"shape": [2, 3]', '"shape": ' + DEEP)), "nested too deeply"),
    "wrong top-level type": (second_line("[1, 2]"), "expected an object"),
    "missing field": (second_line(ACT.replace('"norm": 3.0, ', "")), "'norm' is missing"),
    "shape as string": (second_line(ACT.replace('"shape": [2, 3]', '"shape": "2x3"')), "'shape'"),
    "negative dimension": (second_line(ACT.replace('"shape": [2, 3]', '"shape": [2, -3]')), "'shape'[1]"),
    "module as number": (second_line(ACT.replace('"module": "act"', '"module": 5')), "'module'"),
    "statistic as string": (second_line(ACT.replace('"mean": 0.25', '"mean": "0.25"')), "'mean'"),
    "statistic as bool": (second_line(ACT.replace('"max": 2.0', '"max": true')), "'max'"),
    "latin-1": (second_line(ACT).replace(b'"act"', b'"caf\xe9"'), "not UTF-8"),
    "lone surrogate": (second_line(ACT.replace('"act"', '"\\udc00"')), "surrogate"),
    "invalid json": (second_line("{"), "invalid JSON"),
    "empty dump": (b"\n", "no op outputs"),
}


@pytest.mark.torch
@needs_torch
@pytest.mark.parametrize("case", list(COMPARE_CASES))
def test_compare_refuses_hostile_dumps(tmp_path, capsys, case):
    data, expected = COMPARE_CASES[case]
    b = write_dump(tmp_path / "b", None, data)
    path = b / "rank0" / "ops.jsonl"
    line = "" if case == "empty dump" else ":2"
    refused(capsys, ["compare", str(reference(tmp_path)), str(b)], f"{path}{line}", expected)
    # the reference side is checked the same way
    refused(capsys, ["compare", str(b), str(reference(tmp_path))], f"{path}{line}", expected)


@pytest.mark.torch
@needs_torch
def test_compare_reads_a_byte_order_mark(tmp_path, capsys):
    a = reference(tmp_path)
    b = write_dump(tmp_path / "b", None, b"\xef\xbb\xbf" + (a / "rank0" / "ops.jsonl").read_bytes())
    assert main(["compare", str(a), str(b)]) == 0
    assert "no divergence" in capsys.readouterr().out


@pytest.mark.torch
@needs_torch
def test_compare_refuses_hostile_tensor_files(tmp_path, capsys):
    import torch

    a = reference(tmp_path)
    b = write_dump(tmp_path / "b", [entry("lin", file="t.pt"), entry("act", "aten::relu.default")])
    a_tensors = write_dump(tmp_path / "at", [entry("lin", file="t.pt"), entry("act", "aten::relu.default")])
    torch.save({entry("lin")["name"]: torch.ones(2, 3)}, a_tensors / "rank0" / "t.pt")
    t = b / "rank0" / "t.pt"
    t.write_bytes(b"not a zip file")
    refused(capsys, ["compare", str(a_tensors), str(b)], str(t), "not a tensor file")
    torch.save([1, 2], t)
    refused(capsys, ["compare", str(a_tensors), str(b)], str(t), "dict of tensors")
    torch.save({entry("lin")["name"]: 3}, t)
    refused(capsys, ["compare", str(a_tensors), str(b)], str(t), "not a dense tensor")
    t.unlink()
    refused(capsys, ["compare", str(a_tensors), str(b)], str(t), "missing")
    assert main(["compare", str(a), str(a)]) == 0  # the reference itself is fine


# ---------------------------------------------------------------- compare: nothing outside the dump folder
@pytest.mark.torch
@needs_torch
@pytest.mark.parametrize("file", ["../../../../../../etc/passwd", "/etc/passwd", "..", "rank0/../../x.pt",
                                  "t.pt\u0000", "", "\\\\server\\share\\x.pt"])
def test_compare_refuses_tensor_files_named_outside_the_dump(tmp_path, capsys, monkeypatch, file):
    import torch

    opened = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: opened.append(a) or {})
    a = reference(tmp_path)
    b = write_dump(tmp_path / "b", [entry("lin", file=file), entry("act", "aten::relu.default")])
    refused(capsys, ["compare", str(a), str(b)], f"{b / 'rank0' / 'ops.jsonl'}:1", "'file'")
    assert opened == [], "nothing was loaded"


@pytest.mark.torch
@needs_torch
def test_compare_refuses_links_leading_out_of_the_dump(tmp_path, capsys, monkeypatch):
    import torch

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.pt").write_bytes(b"secret")
    a = reference(tmp_path)
    b = write_dump(tmp_path / "b", [entry("lin", file="t.pt"), entry("act", "aten::relu.default")])
    os.symlink(outside / "secret.pt", b / "rank0" / "t.pt")
    opened = []
    monkeypatch.setattr(torch, "load", lambda *a, **k: opened.append(a) or {})
    refused(capsys, ["compare", str(a), str(b)], f"{b / 'rank0' / 'ops.jsonl'}:1", "'file'", "outside the dump")
    assert opened == []
    # ops.jsonl itself, and the rank folder, may not lead out either
    c = tmp_path / "c"
    (c / "rank0").mkdir(parents=True)
    os.symlink(a / "rank0" / "ops.jsonl", c / "rank0" / "ops.jsonl")
    refused(capsys, ["compare", str(a), str(c)], str(c / "rank0" / "ops.jsonl"), "outside the dump")
    d = tmp_path / "d"
    d.mkdir()
    os.symlink(a / "rank0", d / "rank0")
    refused(capsys, ["compare", str(a), str(d)], str(d / "rank0" / "ops.jsonl"), "outside the dump")
    # a link that stays inside the dump folder is followed; a dump folder that is itself a link is fine
    monkeypatch.undo()
    shared = tmp_path / "e" / "shared"
    shared.mkdir(parents=True)
    torch.save({entry("lin")["name"]: torch.ones(2, 3)}, shared / "t.pt")
    e = write_dump(tmp_path / "e", [entry("lin", file="t.pt"), entry("act", "aten::relu.default")])
    os.symlink(shared / "t.pt", e / "rank0" / "t.pt")
    os.symlink(e, tmp_path / "e_link")
    assert main(["compare", str(tmp_path / "e_link"), str(e)]) == 0
    assert "no divergence" in capsys.readouterr().out


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="POSIX pipes")
@needs_torch
def test_pipes_are_refused_not_read_forever(tmp_path):
    """Before: `profile diff` blocked for ever opening a pipe named profile.json."""
    a = reference(tmp_path)
    (tmp_path / "b" / "rank0").mkdir(parents=True)
    os.mkfifo(tmp_path / "b" / "rank0" / "ops.jsonl")
    (tmp_path / "p").mkdir()
    os.mkfifo(tmp_path / "p" / "profile.json")
    pipe_dump, pipe_profile = tmp_path / "b" / "rank0" / "ops.jsonl", tmp_path / "p" / "profile.json"
    for argv, path in ((["compare", str(a), str(tmp_path / "b")], pipe_dump),
                       (["profile", "diff", str(tmp_path / "p"), str(tmp_path / "p")], pipe_profile)):
        p = subprocess.run([sys.executable, "-m", "torchport", *argv], capture_output=True, text=True, env=ENV,
                           timeout=120)
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert p.stderr.strip().splitlines() == [f"torchport: error: {path} is not a regular file"]


# ---------------------------------------------------------------- compare: NaN statistics diverge
NAN_CASES = {  # the relu output's statistics in A and in B
    "NaN mean where A's is finite": ({}, dict(mean=math.nan)),
    "NaN mean in both runs": (dict(mean=math.nan), dict(mean=math.nan)),
    "infinite norm where A's is finite": ({}, dict(norm=math.inf)),
    "infinite norm in both runs": (dict(norm=math.inf), dict(norm=math.inf)),
    "a min only one run has": ({}, dict(min=None)),
    "NaN element counts differ": (dict(nan=3), dict(nan=5)),
}


@pytest.mark.torch
@needs_torch
@pytest.mark.parametrize("case", list(NAN_CASES))
def test_a_nan_statistic_is_a_divergence(tmp_path, capsys, case):
    """All but the one-sided infinite norm were 'no divergence', exit 0, before (checked against the old
    _stat_metrics and msprobe_verdict): abs(NaN - x) > tol is False, max() drops a NaN that is not
    first, a statistic one run lacks was skipped, NaN counts were compared by presence only.  Both-NaN
    is no evidence of agreement, so it diverges too."""
    a_stats, b_stats = NAN_CASES[case]
    a = write_dump(tmp_path / "a", [entry("lin"), entry("act", "aten::relu.default", **a_stats)])
    b = write_dump(tmp_path / "b", [entry("lin"), entry("act", "aten::relu.default", **b_stats)])
    code = main(["compare", str(a), str(b), "-o", str(tmp_path / "r")])
    out = capsys.readouterr().out
    assert code == 1 and "first divergence: act/aten::relu.default/forward/0/0" in out, out
    with open(tmp_path / "r" / "compare.csv", newline="", encoding="utf-8") as f:
        assert [r["Result"] for r in csv.DictReader(f)] == ["pass", "FAIL"]


@pytest.mark.torch
@needs_torch
def test_equal_statistics_and_all_nan_outputs_still_agree(tmp_path, capsys):
    """No false alarms: identical statistics pass, and an output with no finite element in both runs
    (min/max/mean null, the same NaN count) agrees as far as statistics can tell."""
    all_nan = dict(min=None, max=None, mean=None, norm=0.0, nan=6)
    a = write_dump(tmp_path / "a", [entry("lin"), entry("act", "aten::relu.default", **all_nan)])
    b = write_dump(tmp_path / "b", [entry("lin"), entry("act", "aten::relu.default", **all_nan)])
    assert main(["compare", str(a), str(b)]) == 0
    assert "no divergence" in capsys.readouterr().out


@pytest.mark.torch
@needs_torch
def test_metrics_keep_nan():
    import torch

    from torchport.debug.metrics import Metrics, msprobe_verdict, nan_max, tensor_metrics, worst_first

    assert math.isnan(nan_max([0.5, math.nan])) and math.isnan(nan_max([math.nan, 0.5]))
    worst = sorted([0.1, math.nan, 2.0], key=worst_first)
    assert math.isnan(worst[0]) and worst[1:] == [2.0, 0.1]
    assert not msprobe_verdict(Metrics(cosine=math.nan)) and not msprobe_verdict(Metrics(max_abs=math.nan))
    big = torch.tensor([1e200, -3e200, 2e200], dtype=torch.float64)  # squares overflow float64
    m = tensor_metrics(big, big.clone(), 0.0, 0.0)
    assert m.cosine == pytest.approx(1.0) and msprobe_verdict(m), "was NaN before: inf / inf"
    nan_tol = tensor_metrics(torch.ones(3), torch.ones(3) * 2, math.nan, 0.0)
    assert nan_tol.mismatch == 1.0, "a NaN tolerance passes nothing"


# ---------------------------------------------------------------- profile diff
PROFILE = {"target": "cpu", "steps": {"profiled": 3, "mean_wall_step_us": 1000.0},
           "ops": [{"op": "aten::addmm", "calls": 6, "host_self_us": 30.0, "device_self_us": 0.0},
                   {"op": "aten::relu", "calls": 3, "host_self_us": 10.0, "device_self_us": 0.0}]}
GOOD = json.dumps(PROFILE)
PROFILE_CASES = {  # name: (profile.json text, text the message names besides the file)
    "nan time": (GOOD.replace('"host_self_us": 30.0', '"host_self_us": NaN'), "ops[0]: field 'host_self_us'"),
    "infinite step": (GOOD.replace('"mean_wall_step_us": 1000.0', '"mean_wall_step_us": Infinity'),
                      "'steps.mean_wall_step_us'"),
    "overflowing float": (GOOD.replace('"device_self_us": 0.0}]', '"device_self_us": -1e999}]'), "'device_self_us'"),
    "huge int": (GOOD.replace('"calls": 6', '"calls": ' + HUGE_INT), "number too long"),
    "wide int": (GOOD.replace('"host_self_us": 30.0', '"host_self_us": ' + WIDE_INT), "'host_self_us'"),
    "deep nesting": (DEEP, "nested too deeply"),
    "deep field": (GOOD.replace('"target": "cpu"', '"target": ' + DEEP), "nested too deeply"),
    "wrong top-level type": ("[]", "expected an object"),
    "steps as array": (GOOD.replace('"steps": {"profiled": 3, "mean_wall_step_us": 1000.0}', '"steps": []'),
                       "'steps'"),
    "ops as object": (json.dumps(dict(PROFILE, ops={})), "'ops'"),
    "op as number": (GOOD.replace('"op": "aten::relu"', '"op": 3'), "ops[1]: field 'op'"),
    "calls as string": (GOOD.replace('"calls": 6', '"calls": "6"'), "'calls'"),
    "missing field": (GOOD.replace(', "device_self_us": 0.0}]', "}]"), "'device_self_us' is missing"),
    "lone surrogate": (GOOD.replace("aten::relu", "\\ud800"), "surrogate"),
    "invalid json": (GOOD[:-1], "invalid JSON"),
    "no profiled step": (GOOD.replace('"profiled": 3', '"profiled": 0'), "at least one profiled step"),
}


@pytest.mark.torch
@needs_torch
@pytest.mark.parametrize("case", list(PROFILE_CASES))
def test_profile_diff_refuses_hostile_profiles(tmp_path, capsys, case):
    text, expected = PROFILE_CASES[case]
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "profile.json").write_text(GOOD)
    (tmp_path / "b").mkdir()
    path = tmp_path / "b" / "profile.json"
    path.write_text(text)
    refused(capsys, ["profile", "diff", str(tmp_path / "a"), str(tmp_path / "b")], str(path), expected)


@pytest.mark.torch
@needs_torch
@pytest.mark.parametrize("data, expected", [
    (GOOD.replace("aten::relu", "caf\xe9").encode("latin-1"), "not UTF-8"),
    (b"\xef\xbb\xbf" + GOOD.encode(), None),  # a BOM is read
])
def test_profile_diff_encodings(tmp_path, capsys, data, expected):
    for name in "ab":
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile.json").write_bytes(data if name == "b" else GOOD.encode())
    argv = ["profile", "diff", str(tmp_path / "a"), str(tmp_path / "b")]
    if expected:
        refused(capsys, argv, str(tmp_path / "b" / "profile.json"), expected)
    else:
        assert main(argv) == 0


@pytest.mark.torch
@needs_torch
def test_profile_diff_keeps_an_op_listed_twice_and_charts_dollar_names(tmp_path, capsys):
    """An op listed twice counts twice (it was overwritten); a name between $ signs is not parsed
    as math by the chart (it raised an internal error)."""
    twice = dict(PROFILE, ops=PROFILE["ops"] + [{"op": "aten::relu", "calls": 3, "host_self_us": 20.0,
                                                  "device_self_us": 0.0},
                                                 {"op": "$\\nosuchsymbol{$", "calls": 1, "host_self_us": 1.0,
                                                  "device_self_us": 0.0}])
    for name, profile in (("a", PROFILE), ("b", twice)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "profile.json").write_text(json.dumps(profile))
    assert main(["profile", "diff", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "d")]) == 0
    with open(tmp_path / "d" / "diff.csv", newline="", encoding="utf-8") as f:
        rows = {r["op"]: r for r in csv.DictReader(f)}
    assert float(rows["aten::relu"]["b_us_per_step"]) == pytest.approx(10.0)
    assert float(rows["aten::relu"]["b_calls_per_step"]) == pytest.approx(2.0)


# ---------------------------------------------------------------- CSV cells are never formulas
DANGEROUS = ["=HYPERLINK(\"http://x\",\"y\")", "+1+cmd", "-2+cmd|' /C calc'!A0", "@SUM(A1:A2)", "\tTAB", "\rCR"]


def assert_no_formula(path, names=DANGEROUS):
    """No cell of the CSV at `path` starts a formula, and each of `names` is there, neutralised."""
    with open(path, newline="", encoding="utf-8") as f:
        cells = [c for row in csv.reader(f) for c in row]
    for cell in cells:
        assert not cell.startswith(FORMULA_START) or safe_cell(cell) == cell, (path.name, cell)
    for name in names:
        assert any(c.startswith("'" + name) for c in cells), (path.name, name)


def test_safe_cell():
    assert [safe_cell(c) for c in ("=1+1", "+x", "-x", "@x", "\tx", "\rx")] == \
           ["'=1+1", "'+x", "'-x", "'@x", "'\tx", "'\rx"]
    assert [safe_cell(c) for c in (-64, "-0.25", "+3e-5", 1.5, None, "aten::add", "")] == \
           ["-64", "-0.25", "+3e-5", "1.5", "", "aten::add", ""]
    assert [safe_cell(c) for c in ("-inf", "-nan", "- 1", "-1+2")] == ["'-inf", "'-nan", "'- 1", "'-1+2"]
    assert csv_text(["=h"], [["=a", 1]]) == "'=h\r\n'=a,1\r\n"


@pytest.mark.torch
@needs_torch
def test_compare_csv_neutralises_formulas(tmp_path, capsys):
    entries = [entry(name) for name in DANGEROUS]
    a = write_dump(tmp_path / "a", entries)
    b = write_dump(tmp_path / "b", entries + [entry("only_b", op="=cmd")])
    assert main(["compare", str(a), str(b), "-o", str(tmp_path / "r")]) == 0
    assert_no_formula(tmp_path / "r" / "compare.csv")


@pytest.mark.torch
@needs_torch
def test_profile_diff_csv_neutralises_formulas(tmp_path, capsys):
    ops = [{"op": name, "calls": 1, "host_self_us": 5.0 + i, "device_self_us": 0.0} for i, name in enumerate(DANGEROUS)]
    for name, extra in (("a", 0.0), ("b", 1.0)):
        (tmp_path / name).mkdir()
        profile = dict(PROFILE, ops=[dict(o, host_self_us=o["host_self_us"] + extra) for o in ops])
        (tmp_path / name / "profile.json").write_text(json.dumps(profile))
    assert main(["profile", "diff", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "d")]) == 0
    assert_no_formula(tmp_path / "d" / "diff.csv")


@pytest.mark.torch
@needs_torch
def test_profile_ops_csv_neutralises_formulas(tmp_path):
    import torch

    from torchport.profile import Profiler

    model = torch.nn.Linear(4, 4)
    with Profiler(tmp_path / "p", wait=0, warmup=0, active=1) as prof:
        for name in DANGEROUS:
            with torch.profiler.record_function(name):
                model(torch.randn(2, 4))
        prof.step()
    assert_no_formula(tmp_path / "p" / "ops.csv")
    with open(tmp_path / "p" / "ops.csv", newline="", encoding="utf-8") as f:
        assert any(r["op"] == "aten::addmm" for r in csv.DictReader(f)), "ordinary names are untouched"


@pytest.mark.torch
@needs_torch
def test_compare_with_nothing_aligned_is_unverified_not_agreement(tmp_path, capsys):
    a = write_dump(tmp_path / "a", [entry("lin")])
    b = write_dump(tmp_path / "b", [entry("other", "aten::tanh.default")])
    assert main(["compare", str(a), str(b), "-o", str(tmp_path / "r")]) == 1
    out = capsys.readouterr().out
    assert "unverified" in out and "no divergence" not in out
    assert "unverified" in (tmp_path / "r" / "compare.md").read_text()
