"""torchport export onnx (issue 17): a small conv + linear model built from its factory, its checkpoint (saved on a
"CUDA machine" with a DataParallel `module.` prefix) loaded, exported on the CPU and checked with onnx.checker and
onnxruntime, a dynamic batch axis really taking batch 3; and the converter keeping what an export script gives
torch.onnx.export on the CPU (TP212), the converted script run for real on --to cpu."""
import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import numpy as np  # noqa: E402
import onnx  # noqa: E402  - the test extra installs onnx and onnxruntime
import onnxruntime as ort  # noqa: E402
import torch.serialization as serialization  # noqa: E402

from torchport.cli import main  # noqa: E402

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures" / "export"


@pytest.fixture
def project(tmp_path, monkeypatch):
    """A folder with nets.py and a checkpoint of nets.build() whose storages say cuda:0 and whose keys carry
    `module.`; the current folder."""
    shutil.copy(FIXTURES / "nets.py", tmp_path / "nets.py")
    monkeypatch.chdir(tmp_path)
    monkeypatch.syspath_prepend(str(tmp_path))
    sys.modules.pop("nets", None)
    import nets

    torch.manual_seed(0)
    net = nets.build()
    with torch.no_grad():
        net.bn.running_mean.uniform_(-1, 1)
        net.bn.running_var.uniform_(0.5, 2)
    state = torch.nn.DataParallel(net).state_dict()
    with monkeypatch.context() as m:
        m.setattr(serialization, "location_tag", lambda storage: "cuda:0")
        torch.save({"epoch": 3, "state_dict": state}, tmp_path / "last.pth.tar")
    yield tmp_path, net.eval()
    sys.modules.pop("nets", None)


def export(capsys, *args):
    code = main(["export", "onnx", *args])
    out, err = capsys.readouterr()
    return code, out, err


def test_export_is_checked_matches_the_model_and_takes_another_batch(project, capsys):
    tmp, net = project
    code, out, err = export(capsys, "--model", "nets:build", "--checkpoint", "last.pth.tar",
                            "--input-shape", "1,3,16,16", "--dynamic-axes", "input:0=batch_size",
                            "--dynamic-axes", "output:0=batch_size", "-o", "net.onnx")
    assert code == 0, out + err
    assert "'module.' cut" in out and "opset 11" in out and "onnx.checker (full check): passed" in out, out
    assert "max abs diff" in out and "unverified" not in out
    model = onnx.load(tmp / "net.onnx")
    onnx.checker.check_model(model, full_check=True)
    assert [o.version for o in model.opset_import if o.domain in ("", "ai.onnx")] == [11]
    assert [i.name for i in model.graph.input] == ["input"] and [o.name for o in model.graph.output] == ["output"]
    assert model.graph.input[0].type.tensor_type.shape.dim[0].dim_param == "batch_size"
    # the checkpoint's weights are in the file (not the factory's fresh ones), in eval mode: batch 3 through
    # onnxruntime gives what the loaded model gives
    session = ort.InferenceSession(str(tmp / "net.onnx"), providers=["CPUExecutionProvider"])
    x = torch.randn(3, 3, 16, 16)
    got = session.run(None, {"input": x.numpy()})[0]
    with torch.no_grad():
        want = net(x).numpy()
    assert got.shape == (3, 4)
    assert np.abs(got - want).max() < 1e-5
    fresh = __import__("nets").build().eval()
    with torch.no_grad():
        assert np.abs(got - fresh(x).numpy()).max() > 1e-3  # the loaded weights made the difference


def test_a_file_factory_and_names(project, capsys):
    tmp, _net = project
    code, out, err = export(capsys, "--model", str(tmp / "nets.py") + ":build", "--input-shape", "2,3,8,8",
                            "--input-names", "image", "--output-names", "logits", "--opset", "17", "-o", "a.onnx")
    assert code == 0, out + err
    model = onnx.load(tmp / "a.onnx")
    assert [i.name for i in model.graph.input] == ["image"] and [o.name for o in model.graph.output] == ["logits"]
    assert [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim] == [2, 3, 8, 8]  # not dynamic
    assert "opset 17" in out


def test_a_batch_the_graph_fixed_fails_and_writes_nothing(project, capsys):
    tmp, _net = project
    code, out, _err = export(capsys, "--model", "nets:fixed_batch", "--input-shape", "1,3,8,8",
                             "--dynamic-axes", "input:0", "-o", "fixed.onnx")
    assert code == 1 and "dynamic axes" in out and "nothing written" in out, out
    assert not (tmp / "fixed.onnx").exists()


def test_over_the_tolerance_fails(project, capsys):
    tmp, _net = project
    code, out, _err = export(capsys, "--model", "nets:build", "--checkpoint", "last.pth.tar",
                             "--input-shape", "1,3,16,16", "--atol", "1e-30", "-o", "tight.onnx")
    assert code == 1 and "more than 1e-30" in out, out
    assert not (tmp / "tight.onnx").exists()


def test_without_onnxruntime_the_numbers_are_unverified(project, capsys, monkeypatch):
    tmp, _net = project
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # import onnxruntime raises ImportError
    code, out, err = export(capsys, "--model", "nets:build", "--input-shape", "1,3,8,8", "-o", "u.onnx")
    assert code == 0, err
    assert "onnxruntime: unverified" in out and "max abs diff" not in out
    onnx.checker.check_model(onnx.load(tmp / "u.onnx"))


@pytest.mark.parametrize("args, message", [
    (("--model", "nets:nope", "--input-shape", "1,3,8,8"), "has no nope"),
    (("--model", "nets", "--input-shape", "1,3,8,8"), "module:factory"),
    (("--model", "missing.py:build", "--input-shape", "1,3,8,8"), "not a file"),
    (("--model", "nets:not_a_model", "--input-shape", "1,3,8,8"), "not a torch.nn.Module"),
    (("--model", "nets:build", "--input-shape", "1,3,x"), "--input-shape needs positive integers"),
    (("--model", "nets:build", "--input-shape", "1,3,0,8"), "--input-shape needs positive integers"),
    (("--model", "nets:build", "--input-shape", "1,3,8"), "torch.onnx.export failed"),
    (("--model", "nets:build", "--input-shape", "1,3,8,8", "--dynamic-axes", "x:0"), "not an input or output"),
    (("--model", "nets:build", "--input-shape", "1,3,8,8", "--dynamic-axes", "input"), "NAME:AXIS"),
    (("--model", "nets:build", "--input-shape", "1,3,8,8", "--dtype", "float8"), "--dtype float8"),
    (("--model", "nets:build", "--input-shape", "1,3,8,8", "--opset", "21"), "opsets 7 to 20"),
    (("--model", "nets:build", "--input-shape", "1,3,8,8", "--checkpoint", "nets.py"), "not a checkpoint"),
    (("--model", "nets:fixed_batch", "--input-shape", "1,3,8,8", "--checkpoint", "missing.pt"), "not found"),
])
def test_bad_input_is_one_line(project, capsys, args, message):
    tmp, _net = project
    code, out, err = export(capsys, *args, "-o", "bad.onnx")
    assert code == 2 and len(err.strip().splitlines()) == 1 and message in err, (code, out, err)
    assert "Traceback" not in err and not (tmp / "bad.onnx").exists()


def test_a_checkpoint_that_does_not_fit_and_an_existing_output(project, capsys):
    tmp, net = project
    torch.save({"state_dict": {"fc.weight": torch.zeros(2, 2)}}, tmp / "other.pt")
    code, _out, err = export(capsys, "--model", "nets:build", "--checkpoint", "other.pt", "--input-shape", "1,3,8,8",
                             "-o", "x.onnx")
    assert code == 2 and "does not fit the model" in err, err
    (tmp / "mine.onnx").write_bytes(b"mine")
    code, _out, err = export(capsys, "--model", "nets:build", "--input-shape", "1,3,8,8", "-o", "mine.onnx")
    assert code == 2 and "--force" in err and (tmp / "mine.onnx").read_bytes() == b"mine"


def test_without_the_onnx_package_it_says_so(project, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnx", None)
    code, _out, err = export(capsys, "--model", "nets:build", "--input-shape", "1,3,8,8", "-o", "n.onnx")
    assert code == 2 and "needs the onnx package" in err and len(err.strip().splitlines()) == 1


# ---------------------------------------------------------------- convert: the export stays on the CPU (TP212)

def convert(capsys, src: Path, target: str, out: Path) -> list:
    """Convert one file to `out`; its TP212 findings."""
    code = main(["convert", str(src), "--to", target, "-o", str(out), "--report-dir", str(out) + "_report"])
    capsys.readouterr()
    assert code == 0
    report = json.loads((Path(str(out) + "_report") / "report.json").read_text())
    return [f for f in report["findings"] if f["rule"] == "TP212"]


@pytest.mark.subprocess
@pytest.mark.parametrize("target", ["npu", "cpu"])
def test_convert_keeps_the_export_on_the_cpu(project, capsys, target):
    tmp, _net = project
    shutil.copy(FIXTURES / "export_cuda.py", tmp / "export_cuda.py")
    found = convert(capsys, tmp / "export_cuda.py", target, tmp / f"export_{target}.py")
    text = (tmp / f"export_{target}.py").read_text()
    assert "    model.cpu()\n" in text and 'dummy_input = torch.randn(1, 3, 16, 16, device="cpu")' in text, text
    assert len(found) == 2 and {f["action"] for f in found} == {"modify"}
    if target == "npu":  # what does not feed the export still goes to the target
        assert "return model(x.npu())" in text and "import torch_npu" in text
        return
    assert ".cuda(" not in text and '"cuda"' not in text
    # the CUDA script fails on this machine; the converted one exports a model onnxruntime runs at batch 3
    torch.save(__import__("nets").build().state_dict(), tmp / "w.pt")
    env = {"PATH": "/usr/bin:/bin", "PYTHONPATH": str(tmp)}
    before = subprocess.run([sys.executable, str(tmp / "export_cuda.py"), "w.pt", "before.onnx"], cwd=tmp, env=env,
                            capture_output=True, text=True)
    assert before.returncode != 0 and "CUDA" in before.stderr and not (tmp / "before.onnx").exists()
    after = subprocess.run([sys.executable, str(tmp / f"export_{target}.py"), "w.pt", "after.onnx"],
                           cwd=tmp, env=env, capture_output=True, text=True)
    assert after.returncode == 0, after.stderr[-2000:]
    assert "inputs on cpu model on cpu" in after.stdout
    session = ort.InferenceSession(str(tmp / "after.onnx"), providers=["CPUExecutionProvider"])
    assert session.run(None, {"input": np.zeros((3, 3, 16, 16), np.float32)})[0].shape == (3, 4)


def test_a_device_variable_is_reported_not_rewritten(tmp_path, capsys):
    src = tmp_path / "export_var.py"
    src.write_text("import torch\nfrom torch.onnx import export as onnx_export\n\n"
                   "device = torch.device(\"cuda\")\n\n\n"
                   "def export(model):\n"
                   "    model = model.to(device)\n"
                   "    dummy = torch.randn(1, 3, 8, 8).cuda()\n"
                   "    onnx_export(model, dummy, \"m.onnx\")\n")
    found = convert(capsys, src, "npu", tmp_path / "export_npu.py")
    text = (tmp_path / "export_npu.py").read_text()
    # nothing kept on the CPU: model and input go to the target together, as the device rules convert them
    assert "model.to(device)" in text and "torch.randn(1, 3, 8, 8).npu()" in text and 'torch.device("npu")' in text
    assert [(f["action"], f["line"]) for f in found] == [("advice", 8)]


def test_a_cpu_device_variable_is_left_alone(tmp_path, capsys):
    """The guide's own script: `device = torch.device("cpu")` moves nothing to the GPU, so there is nothing to say."""
    src = tmp_path / "export_cpu_var.py"
    src.write_text("import torch\nimport torch.onnx\n\ndevice = torch.device(\"cpu\")\n\n\n"
                   "def export(model):\n"
                   "    model = model.to(device)\n"
                   "    torch.onnx.export(model, torch.randn(1, 3, device=device), \"m.onnx\")\n")
    assert convert(capsys, src, "npu", tmp_path / "export_npu.py") == []
    assert (tmp_path / "export_npu.py").read_text() == src.read_text()


def test_a_nan_output_or_tolerance_never_passes(project, capsys):
    """issue 31 item 10: a graph that outputs NaN passed ("max abs diff 0": max(0.0, nan) is 0.0); --atol nan
    passed a difference of 23.7."""
    tmp, _net = project
    (tmp / "nanny.py").write_text("import torch\n\n\nclass Nan(torch.nn.Module):\n    def forward(self, x):\n"
                                  "        return x * float('nan')\n\n\ndef build():\n    return Nan()\n")
    code, out, _err = export(capsys, "--model", "nanny:build", "--input-shape", "1,4", "-o", "nan.onnx")
    assert code == 1 and "NaN" in out, out
    assert not (tmp / "nan.onnx").exists()
    code, _out, err = export(capsys, "--model", "nets:build", "--input-shape", "1,3,16,16", "--atol", "nan",
                             "-o", "x.onnx")
    assert code == 2 and "--atol" in err and err.count("\n") == 1, err


def test_a_model_file_named_like_a_module_never_takes_its_place(project, capsys):
    """issue 31 item 9: a --model file called io.py replaced the real io module; a factory that calls sys.exit(0)
    made export exit 0 having written nothing; a huge --input-shape crashed on the allocation."""
    tmp, _net = project
    real_io = sys.modules["io"]
    (tmp / "io.py").write_text((tmp / "nets.py").read_text())
    code, _out, err = export(capsys, "--model", f"{tmp / 'io.py'}:build", "--input-shape", "1,3,16,16",
                             "-o", "io.onnx")
    assert sys.modules["io"] is real_io and code in (0, 1), err
    (tmp / "quitter.py").write_text("import sys\n\n\ndef build():\n    sys.exit(0)\n")
    code, _out, err = export(capsys, "--model", "quitter:build", "--input-shape", "1,4", "-o", "q.onnx")
    assert code == 2 and "sys.exit(0)" in err and not (tmp / "q.onnx").exists(), err
    code, _out, err = export(capsys, "--model", "nets:build", "--input-shape", "100000,100000,100000", "-o", "h.onnx")
    assert code == 2 and "elements" in err and err.count("\n") == 1, err


@pytest.mark.parametrize("where", ["factory", "import"])
def test_model_code_that_calls_os_exit_is_an_error_not_a_silent_exit(project, capsys, where):
    """issue 31 item 9 (hostile re-trial): os._exit(0) in the factory, or while the model file is imported,
    ended torchport with exit 0, having written nothing and said nothing."""
    tmp, _net = project
    body = ("import os\n\n\ndef build():\n    os._exit(0)\n" if where == "factory"
            else "import os\nos._exit(0)\n\n\ndef build():\n    pass\n")
    (tmp / "hard.py").write_text(body)
    for spec in ("hard:build", f"{tmp / 'hard.py'}:build"):
        code, _out, err = export(capsys, "--model", spec, "--input-shape", "1,4", "-o", "q.onnx")
        assert code == 2 and "os._exit(0)" in err and err.count("\n") == 1, err
    assert not (tmp / "q.onnx").exists()


def test_a_module_name_that_python_imports_from_elsewhere_says_which_file_to_give(project, capsys):
    """issue 31 (hostile re-trial F7): `--model io:build` with ./io.py imported Python's own io and said only
    that it failed to import."""
    tmp, _net = project
    (tmp / "io.py").write_text((tmp / "nets.py").read_text())
    code, _out, err = export(capsys, "--model", "io:build", "--input-shape", "1,3,16,16", "-o", "io.onnx")
    assert code == 2 and "give the file, io.py:build" in err and err.count("\n") == 1, err
