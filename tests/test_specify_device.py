"""convert -s / --specify-device (TP404): the launch script takes its device index from an environment variable.

Proven by running the converted script: on the simulated npu with two devices, the device follows the variable
(set, unset, another name); on the cpu target nothing is written and the script runs the same either way; on
the accelerator target on this CPU-only host the variable is still read.  Bad uses are one-line errors."""
import os
import subprocess
import sys

import pytest
from conftest import run_program

import torchport
from torchport.core import codes

SCRIPT = ('"""Where the script\'s tensors go."""\nimport torch\n\n\ndef main():\n    x = torch.ones(2).cuda()\n'
          '    print("device", x.device, torch.cuda.current_device())\n\n\nif __name__ == "__main__":\n    main()\n')
TORCHPORT = [sys.executable, "-m", "torchport"]


def run(args, env=None, **kwargs):
    clean = {k: v for k, v in os.environ.items() if k not in ("NPU_CALCULATE_DEVICE", "MY_DEVICE")}
    return run_program(args, env={**clean, **(env or {})}, capture_output=True, text=True, timeout=600, **kwargs)


def converted(tmp_path, target, *options, script=SCRIPT):
    (tmp_path / "train.py").write_text(script)
    out = tmp_path / f"train_{target}.py"
    p = run([*TORCHPORT, "convert", str(tmp_path / "train.py"), "--to", target, "-o", str(out), "-s", *options,
             "--report-dir", str(tmp_path / f"report_{target}")])
    assert p.returncode == 0, p.stderr
    return out


@pytest.fixture(scope="module")
def built():
    pytest.importorskip("torch")
    p = run([*TORCHPORT, "sim", "--build"])
    assert p.returncode == 0, p.stderr
    return True


@pytest.mark.torch
@pytest.mark.sim
def test_npu_device_follows_the_variable(built, tmp_path):
    out = converted(tmp_path, "npu")
    text = out.read_text()
    assert 'NPU_CALCULATE_DEVICE = int(os.environ.get("NPU_CALCULATE_DEVICE", "0"))' in text
    assert text.index("import torch_npu") < text.index("torch.npu.set_device(NPU_CALCULATE_DEVICE)") \
        < text.index("def main")
    sim = [*TORCHPORT, "sim", "--to", "npu", "--devices", "2", "--", sys.executable, str(out)]
    assert run(sim, {"NPU_CALCULATE_DEVICE": "1"}).stdout.split() == ["device", "npu:1", "1"]
    assert run(sim).stdout.split() == ["device", "npu:0", "0"]
    bad = run(sim, {"NPU_CALCULATE_DEVICE": "one"})
    assert bad.returncode != 0 and "invalid literal for int()" in bad.stderr


@pytest.mark.torch
@pytest.mark.sim
def test_another_variable_name(built, tmp_path):
    out = converted(tmp_path, "npu", "--device-env", "MY_DEVICE")
    sim = [*TORCHPORT, "sim", "--to", "npu", "--devices", "2", "--", sys.executable, str(out)]
    assert run(sim, {"MY_DEVICE": "1", "NPU_CALCULATE_DEVICE": "0"}).stdout.split() == ["device", "npu:1", "1"]


@pytest.mark.subprocess
@pytest.mark.torch
def test_cpu_has_no_index_to_set_and_says_so(tmp_path):
    pytest.importorskip("torch")
    out = converted(tmp_path, "cpu")
    assert "NPU_CALCULATE_DEVICE" not in out.read_text()
    for env in ({}, {"NPU_CALCULATE_DEVICE": "1"}):
        p = run([sys.executable, str(out)], env)
        assert p.returncode == 0, p.stderr
        assert p.stdout.split()[:2] == ["device", "cpu"]
    result = torchport.convert(tmp_path / "train.py", "cpu", dry_run=True, specify_device="NPU_CALCULATE_DEVICE")
    said = [f.message for f in result.findings if f.rule == codes.TP404.id]
    assert said == ["--specify-device: CPU has no device index to set; nothing written"]


@pytest.mark.subprocess
@pytest.mark.torch
def test_accelerator_reads_the_variable_even_without_a_device(tmp_path):
    pytest.importorskip("torch")
    out = converted(tmp_path, "accelerator", script=SCRIPT.replace(", torch.cuda.current_device()", ""))
    assert "torch.accelerator.set_device_index(NPU_CALCULATE_DEVICE)" in out.read_text()
    assert run([sys.executable, str(out)], {"NPU_CALCULATE_DEVICE": "1"}).returncode == 0  # no accelerator here
    assert run([sys.executable, str(out)], {"NPU_CALCULATE_DEVICE": "one"}).returncode != 0


@pytest.mark.subprocess
@pytest.mark.parametrize("options, words", [
    (["--device-env", "1DEVICE"], "not an environment variable name"),
    (["--distributed"], "does not go with --distributed"),
    (["--device-env", "MY_DEVICE", "-s"], None),
])
def test_bad_uses_are_one_line_errors(tmp_path, options, words):
    (tmp_path / "train.py").write_text(SCRIPT)
    if words is None:  # --device-env alone: it goes with -s
        options, words = ["--device-env", "MY_DEVICE"], "goes with -s/--specify-device"
    else:
        options = ["-s", *options]
    p = subprocess.run([*TORCHPORT, "convert", str(tmp_path / "train.py"), "--to", "npu", "--dry-run", *options],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and words in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr


@pytest.mark.subprocess
def test_a_folder_needs_the_launch_script(tmp_path):
    (tmp_path / "proj").mkdir()
    (tmp_path / "proj" / "train.py").write_text(SCRIPT)
    (tmp_path / "proj" / "util.py").write_text("import torch\ny = torch.zeros(1).cuda()\n")
    p = subprocess.run([*TORCHPORT, "convert", str(tmp_path / "proj"), "--to", "npu", "-s", "--dry-run"],
                       capture_output=True, text=True, timeout=120)
    assert p.returncode != 0 and "needs --launch" in p.stderr
    result = torchport.convert(tmp_path / "proj", "npu", tmp_path / "out", launch="train.py",
                               specify_device="NPU_CALCULATE_DEVICE", write_reports=False)
    assert "set_device(NPU_CALCULATE_DEVICE)" in (tmp_path / "out" / "train.py").read_text()
    assert "NPU_CALCULATE_DEVICE" not in (tmp_path / "out" / "util.py").read_text()  # only the launch script
    assert [f.file for f in result.findings if f.rule == codes.TP404.id] == ["train.py"]


@pytest.mark.parametrize("source, words", [
    ("import torch; import os\nx = torch.ones(1).cuda()\n", "shares its line"),
    ("x = 1\n", "no top-level import"),
    ("import torch\nNPU_CALCULATE_DEVICE = 3\n", "is taken"),
])
def test_where_it_cannot_be_written_it_says_why(source, words):
    from torchport.converter.run import Converter

    new, findings, _ = Converter("npu", launch="a.py", device_env="NPU_CALCULATE_DEVICE").convert_text(
        "a.py", source.encode(), "python")
    assert "set_device(NPU_CALCULATE_DEVICE)" not in (new or b"").decode()
    said = [f.message for f in findings if f.rule == codes.TP404.id]
    assert len(said) == 1 and words in said[0] and "nothing written" in said[0]
