"""A "cuda" bound in one file and used as a device in another (issue 30 class 1 across files): config.py's
`BACKEND = "cuda"` says nothing in its own file, train.py's `torch.ones(2, device=BACKEND)` says it is a device.
convert, analyze and check decide it alike, and the converted project runs on cpu and on the simulated npu."""
import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import analyze  # the keyword form: torchport.commands.analyze.AnalyzeRequest.of

import torchport
from torchport.api import check  # the keyword form: torchport.commands.check.CheckRequest.of
from torchport.cli import main
from torchport.converter.project import called_with_cuda, device_names, device_parameters, module_names

FILES = {
    "config.py": 'BACKEND = "cuda"\nNAMES = ("cuda", "tpu")  # accelerator names: no device\nLABEL = "cuda"\n',
    "pkg/__init__.py": "",
    "pkg/settings.py": 'DEVICE: str = "cuda:0"\n',
    "pkg/train.py": ('import torch\nfrom config import BACKEND, LABEL\nfrom . import settings\n\n\ndef run():\n'
                     '    x = torch.ones(2, device=BACKEND)\n    y = torch.zeros(2).to(settings.DEVICE)\n'
                     '    print("RESULT", LABEL, (x + y).device.type)\n'),
    "main.py": "from pkg.train import run\nfrom pkg import engines\nfrom pkg.engines import Engine\n\nrun()\n"
               "e = Engine('cuda')\nprint('ENGINE', e.prepare().device.type, engines.place(2, 'cuda').device.type)\n",
    "pkg/engines.py": ("import torch\n\n\nclass Engine:\n    def __init__(self, device=None, amp=False):\n"
                       "        self._device = device\n\n    def prepare(self):\n        return torch.ones(1).to(self._device)\n"
                       "\n\ndef place(n, where):\n    return torch.zeros(n).to(where)\n"),
}


def project(tmp_path: Path) -> Path:
    root = tmp_path / "proj"
    for rel, text in FILES.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    return root


def test_names_used_as_devices_in_another_file_are_found():
    found, users = device_names(FILES.items())
    assert found == {("config.py", "BACKEND"), ("pkg/settings.py", "DEVICE")}, \
        "LABEL is only printed, NAMES is no plain device string"
    assert users == {"pkg/train.py"}, "the file that uses them needs the registration import"


def test_calls_passing_a_cuda_string_are_found_by_their_callee():
    text = 'e = Engine("cuda")\nx = E.place(2, "cuda:0")\nf(g(1), "cuda")\nh(["cuda"])\nk(a,\n  "cuda")\nd = "cuda"\n'
    assert called_with_cuda(text) == ["Engine", "E.place", "f", "k"], "not inside a nested bracket, not a bare value"


def test_device_parameters_of_other_files_callables_are_found():
    assert device_parameters(FILES.items()) == {("main.py", "Engine", 0, "device"), ("main.py", "engines.place", 1, "where")}
    assert module_names("pkg/settings.py") == ["pkg.settings", "settings"]
    assert module_names("pkg/__init__.py") == ["pkg"]


@pytest.mark.parametrize("target", ["npu", "cpu"])
def test_convert_analyze_and_check_agree(tmp_path, target):
    root = project(tmp_path)
    result = torchport.convert(root, target, tmp_path / "out", jobs=1)
    device = "npu" if target == "npu" else "cpu"
    assert (tmp_path / "out" / "config.py").read_text().splitlines()[0] == f'BACKEND = "{device}"'
    assert 'LABEL = "cuda"' in (tmp_path / "out" / "config.py").read_text()
    indexed = "npu:0" if target == "npu" else "cpu"   # CPU torch's device has no index
    assert (tmp_path / "out" / "pkg" / "settings.py").read_text() == f'DEVICE: str = "{indexed}"\n'
    changes = sorted((f.file, f.line) for f in result.findings if f.is_change and f.rule != "TP001")
    assert [c for c in changes if c[0] != "pkg/train.py"] == [("config.py", 1), ("main.py", 6), ("main.py", 7),
                                                              ("pkg/settings.py", 1)]
    a = analyze(root, [target], jobs=1, write_reports=False)
    assert sorted((f.file, f.line) for f in a.target_findings(target) if f.is_change and f.rule != "TP001") == changes
    k = check([str(root)], target, jobs=1)
    assert {(f.file.split("proj/", 1)[-1], f.line) for f in k.findings if f.is_change and f.rule != "TP001"} \
        >= {("config.py", 1), ("pkg/settings.py", 1)}


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.parametrize("target", ["cpu", "npu"])
def test_the_converted_project_runs(tmp_path, target):
    root = project(tmp_path)
    out = tmp_path / "out"
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        main(["convert", str(root), "--to", target, "-o", str(out)])
    command = [sys.executable, "main.py"]
    if target != "cpu":
        command = [sys.executable, "-m", "torchport", "sim", "--to", target, "--", *command]
    src = str(Path(__file__).resolve().parents[1] / "src")
    p = subprocess.run(command, cwd=out, capture_output=True, text=True, timeout=300,
                       env={**os.environ, "PYTHONPATH": src})
    assert p.returncode == 0, p.stderr[-2000:]
    assert "RESULT cuda " + target in p.stdout, p.stdout
    assert f"ENGINE {target} {target}" in p.stdout, p.stdout
