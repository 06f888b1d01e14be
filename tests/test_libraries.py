"""Installed libraries the project calls (issue 30 class 7): analyze and migrate find the CUDA code on the paths the
project calls in them, without importing them; `--runtime-shim` puts the run-time mapping first in the entry
scripts, and the migrated project then runs on the cpu target and on the simulated npu and mlu."""
import ast
import contextlib
import io
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import analyze  # the keyword form: torchport.commands.analyze.AnalyzeRequest.of

from torchport.analyze import libraries
from torchport.cli import main

MIXING = '''\
import torch


def _noise(n, device="cuda"):
    return torch.randn(n, device=device)


def mixup(x, alpha=0.5, device='cuda'):
    lam = torch.tensor(alpha, device=device)
    return x * lam + _noise(x.shape[0]).sum() * 0


def plain(x):
    return x + 1


class Mixer:
    def __init__(self, p=0.5):
        self.p = p

    def __call__(self, x):
        return x.cuda() * self.p
'''

TRAIN = '''\
import torch
import mixlib
from mixlib import mixup, plain

x = torch.ones(3).cuda()
y = mixup(x)
z = mixup(x, device=x.device)
w = plain(x)
m = mixlib.Mixer(0.5)
print("RESULT", float(y.sum()), float(z.sum()), float(w.sum()), float(m(x).sum()), y.device.type)
'''


def make(tmp_path: Path) -> tuple:
    site, proj = tmp_path / "site", tmp_path / "proj"
    (site / "mixlib").mkdir(parents=True)
    (site / "mixlib" / "__init__.py").write_text("from .mixing import Mixer, mixup, plain\n")
    (site / "mixlib" / "mixing.py").write_text(MIXING)
    proj.mkdir()
    (proj / "train.py").write_text(TRAIN)
    (proj / "helpers.py").write_text("import mixlib\n\n\ndef make():\n    return mixlib.Mixer()\n")
    return site, proj


def cli(*args) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


def test_uses_are_followed_to_their_definitions_and_the_cuda_code_they_reach(tmp_path, monkeypatch):
    site, proj = make(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    uses = libraries.project_uses("train.py", ast.parse(TRAIN), set())
    assert {u.name for u in uses} == {"mixlib.mixup", "mixlib.plain", "mixlib.Mixer"}, "torch is the framework"
    scan = libraries.scan(uses, ["npu", "cpu"])
    assert scan.read == ["mixlib"] and scan.missing == []
    reaches = {(r.line, r.name): r for r in scan.reaches["npu"]}
    # line 6 leaves device out: its default and the default of the helper it calls (through the re-export)
    assert [(t.file, t.line, t.old, t.new, t.default_of) for t in reaches[6, "mixlib.mixup"].touches] == [
        ("mixlib/mixing.py", 4, '"cuda"', '"npu"', "device"), ("mixlib/mixing.py", 8, "'cuda'", "'npu'", "device")]
    # line 7 passes device=: only the helper's default is left
    assert [t.line for t in reaches[7, "mixlib.mixup"].touches] == [4]
    assert (8, "mixlib.plain") not in reaches, "a function with no CUDA code"
    assert [(t.line, t.old, t.new) for t in reaches[9, "mixlib.Mixer"].touches] == [(22, ".cuda(", ".npu(")]
    assert [(t.line, t.new) for t in next(r for r in scan.reaches["cpu"] if r.line == 9).touches] == \
        [(22, '.to("cpu")')]


def test_a_positional_argument_counts_as_passing_the_parameter():
    call = ast.parse("mixup(x, 0.1, 'cpu')").body[0].value
    args = libraries.Arguments.of(call)
    assert args.passes("device", 2) and not args.passes("device", 3)
    assert libraries.Arguments.of(ast.parse("f(*a)").body[0].value).passes("device", 5)


def test_relative_imports_resolve_from_packages_and_modules():
    assert libraries.absolute("pkg.sub", 1, "mixing", True) == "pkg.sub.mixing"
    assert libraries.absolute("pkg.sub.mod", 1, "mixing", False) == "pkg.sub.mixing"
    assert libraries.absolute("pkg.sub.mod", 2, None, False) == "pkg"


def test_analyze_reports_them_and_counts_them_as_manual_work(tmp_path, monkeypatch):
    site, proj = make(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    result = analyze(proj, ["npu"], jobs=1, write_reports=False)
    assert result.readiness["npu"].library_paths == 2, "mixup and Mixer (a name once, however often it is used)"
    assert {(r.file, r.line) for r in result.libraries.reaches["npu"]} == {("train.py", 6), ("train.py", 7),
                                                                          ("train.py", 9), ("helpers.py", 5)}
    data = result.to_dict()
    assert data["libraries"]["packages_read"] == ["mixlib"] and data["summary"]["readiness"]["npu"]["library_paths"] == 2


def test_a_package_that_is_not_installed_is_said_to_be_missing(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.py").write_text("import torch\nimport nosuchlib_xyz\nnosuchlib_xyz.run(torch.ones(1).cuda())\n")
    result = analyze(proj, ["npu"], jobs=1, write_reports=False)
    assert result.libraries.missing == ["nosuchlib_xyz"] and result.libraries.reaches["npu"] == []


def test_an_interpreter_that_cannot_run_is_a_usage_error(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "a.py").write_text("import yaml\nyaml.safe_load('a: 1')\n")
    code, _, err = cli("analyze", proj, "--to", "npu", "-o", tmp_path / "out", "--python", tmp_path / "no-python")
    assert code == 2 and err.count("\n") == 1 and "--python" in err and "Traceback" not in err


@pytest.mark.subprocess
def test_python_names_another_interpreter(tmp_path):
    site, proj = make(tmp_path)
    wrapper = tmp_path / "python"
    wrapper.write_text(f"#!/bin/sh\nPYTHONPATH={site} exec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    result = analyze(proj, ["npu"], jobs=1, write_reports=False, python=str(wrapper))
    assert result.libraries.interpreter == str(wrapper) and result.libraries.read == ["mixlib"]
    assert len(result.libraries.reaches["npu"]) == 4


def test_migrate_lists_them_and_the_runtime_shim_goes_into_entry_scripts_only(tmp_path, monkeypatch):
    site, proj = make(tmp_path)
    monkeypatch.syspath_prepend(str(site))
    out = tmp_path / "out"
    code, stdout, _ = cli("migrate", proj, "--to", "npu", "-o", out)
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    rows = [r for r in data["whats_left"] if r["kind"] == "library"]
    assert code == 1 and {(r["file"], r["line"], r["risk"]) for r in rows} == {
        ("train.py", 7, "fail"), ("train.py", 8, "fail"), ("train.py", 10, "fail"), ("helpers.py", 5, "fail")}, rows
    assert "mixlib/mixing.py:8" in next(r["why"] for r in rows if r["line"] == 7)
    assert "--runtime-shim" in rows[0]["fix"]

    code, _, _ = cli("migrate", proj, "--to", "npu", "-o", out, "--force", "--runtime-shim")
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    kinds = {r["kind"] for r in data["whats_left"] if r["item"].startswith("mixlib")}
    assert code == 0 and kinds == {"library-shimmed"}
    train = (out / "train.py").read_text().splitlines()
    assert train[0] == "from torch_npu.contrib import transfer_to_npu  # noqa: F401 (torchport --runtime-shim)"
    assert "runtime-shim" not in (out / "helpers.py").read_text(), "a module of definitions is no entry script"
    cli("migrate", proj, "--to", "mlu", "-o", tmp_path / "out_mlu", "--runtime-shim")
    assert (tmp_path / "out_mlu" / "train.py").read_text().startswith("import torchport.auto  # noqa: F401")


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.parametrize("target", ["cpu", "npu", "mlu"])
def test_the_shimmed_project_runs_where_the_unshimmed_one_fails(tmp_path, target):
    site, proj = make(tmp_path)
    src = Path(__file__).resolve().parents[1] / "src"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(src)])}

    def run(tree: Path):
        command = [sys.executable, "train.py"]
        if target != "cpu":
            command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--", *command]
        return subprocess.run(command, cwd=tree, env=env, capture_output=True, text=True, timeout=300)

    for shim in (False, True):
        tree = tmp_path / f"{target}_{shim}"
        code, _, _ = cli("convert", proj, "--to", target, "-o", tree, *(["--runtime-shim"] if shim else []))
        assert code in (0, 1)
        p = run(tree)
        if not shim:
            assert p.returncode != 0 and "CUDA" in p.stderr, p.stderr[-2000:]
            continue
        assert p.returncode == 0, p.stderr[-2000:]
        line = next(ln for ln in p.stdout.splitlines() if ln.startswith("RESULT"))
        assert line.split()[-1] == target, line


def test_a_namespace_package_is_read_through_its_folders(tmp_path, monkeypatch):
    site = tmp_path / "site"
    (site / "nspkg" / "mix").mkdir(parents=True)    # nspkg has no __init__.py
    (site / "nspkg" / "mix" / "__init__.py").write_text("def go(x, device='cuda'):\n    return x.to(device)\n")
    monkeypatch.syspath_prepend(str(site))
    uses = libraries.project_uses("a.py", ast.parse("from nspkg.mix import go\ngo(1)\n"), set())
    scan = libraries.scan(uses, ["npu"])
    assert scan.read == ["nspkg"] and [(r.line, [t.default_of for t in r.touches]) for r in scan.reaches["npu"]] \
        == [(2, ["device"])]


def test_a_class_named_through_a_variable_is_followed_and_a_guarded_branch_is_no_cpu_item(tmp_path, monkeypatch):
    """vector-quantize-pytorch 1.32.0: `codebook_class = Codebook; self._codebook = codebook_class(...)`; and on the
    cpu target a CUDA branch under `torch.cuda.is_available()` never runs (pytorch-metric-learning's
    use_cuda_if_available), so it is no item there, while on npu the library then runs on the CPU."""
    site = tmp_path / "site"
    (site / "vqlib").mkdir(parents=True)
    (site / "vqlib" / "__init__.py").write_text(
        "import torch\n\n\nclass Codebook:\n    def __init__(self):\n        self.x = torch.zeros(1).cuda()\n\n\n"
        "class Outer:\n    def __init__(self):\n        codebook_class = Codebook\n        self.cb = codebook_class()\n\n\n"
        "def pick():\n    return torch.device('cuda' if torch.cuda.is_available() else 'cpu')\n")
    monkeypatch.syspath_prepend(str(site))
    uses = libraries.project_uses("a.py", ast.parse("import vqlib\nvqlib.Outer()\nvqlib.pick()\n"), set())
    scan = libraries.scan(uses, ["npu", "cpu"])
    npu = {(r.line, t.line) for r in scan.reaches["npu"] for t in r.touches}
    cpu = {(r.line, t.line) for r in scan.reaches["cpu"] for t in r.touches}
    assert (2, 6) in npu and (2, 6) in cpu, "Codebook's .cuda() through the variable"
    assert (3, 16) in npu and (3, 16) not in cpu, "the guarded answer: a CPU on cpu, the CPU instead of the NPU on npu"


def test_a_string_a_library_compares_with_is_no_use_of_cuda(tmp_path, monkeypatch):
    """onnxruntime 1.x onnxruntime_inference_collection.py:25-27: `if device_type == "cuda": return
    C.OrtDevice.cuda()`, a table of its own device names, reached from InferenceSession: a question, no item."""
    site = tmp_path / "site"
    (site / "ortlike").mkdir(parents=True)
    (site / "ortlike" / "__init__.py").write_text(
        "def kind(device_type):\n    if device_type == 'cuda':\n        return 1\n    return 0\n\n\n"
        "def session(device_type='cpu'):\n    return kind(device_type)\n\n\n"
        "def place(x):\n    return x.to('cuda')\n")
    monkeypatch.syspath_prepend(str(site))
    uses = libraries.project_uses("a.py", ast.parse("import ortlike\nortlike.session()\nortlike.place(1)\n"), set())
    scan = libraries.scan(uses, ["npu"])
    assert [(r.line, [t.line for t in r.touches]) for r in scan.reaches["npu"]] == [(3, [12])]
