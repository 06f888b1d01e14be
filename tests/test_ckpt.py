"""torchport ckpt: a checkpoint saved on a CUDA machine (fault-injected: every storage tagged cuda:0) with a
DataParallel `module.` prefix is inspected without running pickled code, and fixed into a copy that loads
into the plain model with weights_only=True on this CPU machine."""
import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

torch = pytest.importorskip("torch")
import torch.serialization as serialization  # noqa: E402

pytestmark = pytest.mark.torch

ROOT = Path(__file__).resolve().parents[1]


def build():
    torch.manual_seed(0)
    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), torch.nn.Linear(3, 2))


def save_as_on_cuda(obj, path, monkeypatch):
    """torch.save with every storage's location written as cuda:0, as a CUDA machine writes it."""
    with monkeypatch.context() as m:
        m.setattr(serialization, "location_tag", lambda storage: "cuda:0")
        torch.save(obj, path)


@pytest.fixture
def project(tmp_path, monkeypatch):
    net = build()
    opt = torch.optim.SGD(net.parameters(), lr=0.1, momentum=0.9)
    net(torch.randn(5, 4)).sum().backward()
    opt.step()
    ckpt = {"model": torch.nn.DataParallel(net).state_dict(), "optimizer": opt.state_dict(),
            "scaler": torch.amp.GradScaler("cpu").state_dict(), "epoch": 3}
    save_as_on_cuda(ckpt, tmp_path / "cuda.pt", monkeypatch)
    save_as_on_cuda({"model": net.state_dict(), "args": argparse.Namespace(lr=0.1)}, tmp_path / "args.pt", monkeypatch)
    (tmp_path / "models.py").write_text(
        "import torch\n\n\ndef build():\n    return torch.nn.Sequential(torch.nn.Linear(4, 3), torch.nn.BatchNorm1d(3), "
        "torch.nn.Linear(3, 2))\n\n\ndef other():\n    return torch.nn.Sequential(torch.nn.Linear(4, 2))\n")
    monkeypatch.chdir(tmp_path)
    return tmp_path, net


def cli(*args, cwd):
    p = subprocess.run([sys.executable, "-m", "torchport", "ckpt", *args], capture_output=True, text=True, cwd=cwd,
                       env={"PYTHONPATH": str(ROOT / "src"), "PATH": "/usr/bin:/bin"})
    return p.returncode, p.stdout, p.stderr


def test_the_fault_is_the_real_one(project):
    tmp, _net = project
    with pytest.raises(RuntimeError, match="Attempting to deserialize object on a CUDA device"):
        torch.load(tmp / "cuda.pt", weights_only=True)


@pytest.mark.subprocess
def test_inspect_finds_devices_prefix_and_states(project):
    tmp, _net = project
    code, out, err = cli("inspect", "cuda.pt", "--json", cwd=tmp)
    assert code == 1, err
    found = json.loads(out)
    assert found["locations"] == {"cuda:0": 15}
    parts = {p["where"]: p for p in found["parts"]}
    assert parts["model"]["kind"] == "state-dict" and parts["model"]["prefix"] == "module."
    assert parts["optimizer"]["kind"] == "optimizer" and parts["scaler"]["kind"] == "grad-scaler"
    assert parts["epoch"]["detail"] == "3"
    problems = " ".join(p["problem"] for p in found["problems"])
    assert "cuda:0" in problems and "'module.'" in problems


@pytest.mark.subprocess
def test_fix_makes_a_copy_that_loads_into_the_plain_model(project):
    tmp, net = project
    before = (tmp / "cuda.pt").read_bytes()
    code, out, err = cli("fix", "cuda.pt", "-o", "fixed.pt", "--strip-prefix", "module.", "--check-model",
                         "models:build", cwd=tmp)
    assert code == 0, err
    assert "stripped 'module.'" in out and "every key fits" in out
    assert (tmp / "cuda.pt").read_bytes() == before  # the user's checkpoint is untouched
    ckpt = torch.load(tmp / "fixed.pt", weights_only=True)  # no map_location: every storage is on the CPU
    model = build()
    model.load_state_dict(ckpt["model"])  # strict
    for name, value in net.state_dict().items():
        assert torch.equal(model.state_dict()[name], value), name
    assert ckpt["epoch"] == 3 and set(ckpt["optimizer"]) == {"state", "param_groups"}
    code, out, _err = cli("inspect", "fixed.pt", cwd=tmp)
    assert code == 0 and "no problems found" in out


@pytest.mark.subprocess
def test_pickled_objects_are_refused_unless_allowed(project):
    tmp, _net = project
    code, _out, err = cli("inspect", "args.pt", cwd=tmp)
    assert code == 2 and "argparse.Namespace" in err and "--allow argparse.Namespace" in err
    assert len(err.strip().splitlines()) == 1
    code, out, err = cli("fix", "args.pt", "-o", "a.pt", "--allow", "argparse.Namespace", cwd=tmp)
    assert code == 0, err
    # the Namespace is still in the copy: a plain weights_only load of it fails, and `next:` must not say it works
    assert "safe_globals([argparse.Namespace])" in out, out
    with pytest.raises(Exception, match="argparse.Namespace"):
        torch.load(tmp / "a.pt", weights_only=True)


@pytest.mark.subprocess
def test_a_model_that_does_not_fit_is_refused_and_nothing_written(project):
    tmp, _net = project
    for factory in ("models:other", "models:build"):  # other: shapes; build without stripping: keys
        code, _out, err = cli("fix", "cuda.pt", "-o", "bad.pt", "--check-model", factory, cwd=tmp)
        assert code == 2 and "does not fit the model" in err, err
        assert not (tmp / "bad.pt").exists()


@pytest.mark.subprocess
@pytest.mark.parametrize("args, message", [
    (("fix", "cuda.pt", "-o", "cuda.pt"), "never"),
    (("fix", "missing.pt", "-o", "x.pt"), "not found"),
    (("inspect", "models.py"), "not a checkpoint"),
])
def test_bad_input_is_one_line(project, args, message):
    tmp, _net = project
    code, _out, err = cli(*args, cwd=tmp)
    assert code == 2 and len(err.strip().splitlines()) == 1, err
    assert message in err or "new file" in err


@pytest.mark.subprocess
def test_an_existing_output_needs_force(project):
    tmp, _net = project
    (tmp / "out.pt").write_bytes(b"mine")
    code, _out, err = cli("fix", "cuda.pt", "-o", "out.pt", cwd=tmp)
    assert code == 2 and "--force" in err and (tmp / "out.pt").read_bytes() == b"mine"
    code, _out, err = cli("fix", "cuda.pt", "-o", "out.pt", "--force", cwd=tmp)
    assert code == 0 and torch.load(tmp / "out.pt", weights_only=True)["epoch"] == 3


@pytest.mark.parametrize("spelling", ["cuda.pt", "nosuch/../cuda.pt", "./cuda.pt", "link.pt"])
def test_fix_never_writes_over_its_input_however_it_is_spelled(project, spelling):
    """issue 31 item 3: `-o nosuchdir/../in.pt` overwrote the input (the folder did not exist, so the paths were
    not compared); a link to the input is the input too."""
    from torchport.ckpt import fix
    from torchport.core.errors import UsageError

    tmp, _net = project
    (tmp / "link.pt").symlink_to(tmp / "cuda.pt")
    before = (tmp / "cuda.pt").read_bytes()
    with pytest.raises(UsageError, match="never|new file"):
        fix(tmp / "cuda.pt", tmp / spelling, force=True)
    assert (tmp / "cuda.pt").read_bytes() == before and not (tmp / "nosuch").exists()


def test_export_never_writes_over_the_checkpoint_or_the_model_source(project):
    from torchport.core.errors import UsageError
    from torchport.export import ExportRequest, export_onnx

    tmp, _net = project
    source = (tmp / "models.py").read_text()
    with pytest.raises(UsageError, match="model's source"):
        export_onnx(ExportRequest.of(f"{tmp / 'models.py'}:build", tmp / "nosuch" / ".." / "models.py", [(1, 4)]))
    with pytest.raises(UsageError, match="checkpoint it reads"):
        export_onnx(ExportRequest.of("models:build", tmp / "nosuch" / ".." / "cuda.pt", [(1, 4)],
                                     checkpoint=tmp / "cuda.pt"))
    assert (tmp / "models.py").read_text() == source and not (tmp / "nosuch").exists()


class _Payload:
    def __init__(self, func, arg):
        self.func, self.arg = func, arg

    def __reduce__(self):
        return (self.func, (self.arg,))


@pytest.mark.subprocess
@pytest.mark.parametrize("func", [eval, os.system])
def test_a_pickle_that_runs_code_is_named_and_never_allowed(project, func):
    """issue 31 item 4: for a pickle that calls eval, torchport suggested `--allow eval`, and the payload then ran.
    It names the global, says loading would run code, and --allow of such a callable is refused."""
    tmp, _net = project
    witness = tmp / "ran"
    arg = f"open({str(witness)!r}, 'w').write('x')" if func is eval else f"touch {witness}"
    torch.save({"model": build().state_dict(), "evil": _Payload(func, arg)}, tmp / "evil.pt")
    code, _, err = cli("inspect", "evil.pt", cwd=tmp)
    name = "builtins.eval" if func is eval else f"{os.name == 'posix' and 'posix' or 'nt'}.system"
    assert code == 2 and name in err and "run code" in err and "--allow" not in err, err
    code, _, err = cli("inspect", "evil.pt", "--allow", name, cwd=tmp)
    assert code == 2 and "runs code" in err, err
    assert not witness.exists(), "the payload ran"


def test_a_zip_bomb_is_refused_before_it_is_unpacked(project):
    """issue 31 item 7: a 2 MB checkpoint unpacked to 2.3 GB (42 s) in `ckpt inspect`."""
    import zipfile

    tmp, _net = project
    torch.save({"w": torch.zeros(4)}, tmp / "small.pt")
    bomb = tmp / "bomb.pt"
    with zipfile.ZipFile(tmp / "small.pt") as src, zipfile.ZipFile(bomb, "w", zipfile.ZIP_DEFLATED) as dst:
        for info in src.infolist():
            dst.writestr(info.filename, src.read(info))
        dst.writestr("small/data/huge", b"\0" * (300 << 20))   # 300 MiB of zeros: about 300 KB compressed
    assert bomb.stat().st_size < 2 << 20
    from torchport.ckpt import inspect
    from torchport.core.errors import UsageError

    with pytest.raises(UsageError, match="unpack to 300 MiB"):
        inspect(bomb)
    inspect(tmp / "small.pt")   # an ordinary checkpoint is read as before


@pytest.mark.parametrize("protocol", [0, 2, 4])
@pytest.mark.parametrize("container", ["pickle", "torch-legacy", "torch-zip"])
def test_a_code_running_global_is_named_as_python_imports_it_whatever_the_protocol(project, protocol, container,
                                                                                    capsys):
    """issue 31 item 4 (hostile re-trial): a protocol 2 pickle of subprocess.Popen was named `commands.Popen`
    (Python 2's name, which Python 3 maps back), with `--allow commands.Popen` suggested; protocol 4 was refused
    with the first line of torch's preamble and no reason.  The opcodes are read before torch reads anything."""
    import pickle

    tmp, _net = project
    payload = {"w": torch.ones(2), "evil": _Payload(subprocess.Popen, ["touch", str(tmp / "ran")])}
    path = tmp / f"evil{protocol}.pt"
    if container == "pickle":
        path.write_bytes(pickle.dumps(payload, protocol=protocol))
    else:
        torch.save(payload, path, pickle_protocol=protocol,
                   _use_new_zipfile_serialization=container == "torch-zip")
    from torchport.ckpt import inspect
    from torchport.core.errors import UsageError

    with pytest.raises(UsageError, match=r"calls subprocess\.Popen.* when it is loaded: loading it would run code"):
        inspect(path)
    with pytest.raises(UsageError, match="runs code"):
        inspect(path, allow=["commands.Popen"])   # Python 2's name for it is no way round the refusal
    assert not (tmp / "ran").exists()


def test_a_refusal_gives_torchs_reason_not_its_preamble(project):
    """A checkpoint torch's weights-only loader cannot read is refused with the reason (the opcode), not the first
    line every such message starts with."""
    import pickle

    tmp, _net = project
    (tmp / "plain4.pt").write_bytes(pickle.dumps({"a": 1}, protocol=4))
    from torchport.ckpt import inspect
    from torchport.core.errors import UsageError

    with pytest.raises(UsageError, match=r"Unsupported operand 149 \(the pickle opcode FRAME") as e:
        inspect(tmp / "plain4.pt")
    assert "In PyTorch 2.6" not in str(e.value)


@pytest.mark.parametrize("name", ["torch.load", "torch.serialization.load", "numpy.load", "pathlib.Path",
                                  "torch._C._jit_pass_inline", "torch.ops.aten", "builtins.open"])
def test_allow_refuses_what_reads_or_runs_beyond_the_checkpoint(project, name):
    """A callable that loads another file (torch.load, numpy.load: another pickle, another path) or reaches torch's
    internals is no value to trust; a numpy array's own globals still are."""
    tmp, _net = project
    from torchport.ckpt import inspect, runs_code
    from torchport.core.errors import UsageError

    torch.save({"w": torch.ones(1)}, tmp / "plain.pt")
    with pytest.raises(UsageError, match="runs code"):
        inspect(tmp / "plain.pt", allow=[name])
    assert not runs_code("numpy.core.multiarray._reconstruct") and not runs_code("numpy.dtype")
    assert not runs_code("argparse.Namespace") and not runs_code("collections.OrderedDict")


@pytest.mark.parametrize("func, args", [
    ("cProfile.run", ("open('PWNED','w').close()",)),
    ("logging.FileHandler", ("VICTIM", "w")),
    ("zipfile.ZipFile", ("VICTIM", "w")),
    ("pydoc.pipepager", ("hi", "touch PWNED")),
])
def test_allow_takes_only_plain_data_types_and_trust_still_refuses_code(project, func, args):
    """A hostile re-trial: `runs_code` was a blocklist, so cProfile.run, pydoc.pipepager, logging.FileHandler or
    zipfile.ZipFile were suggested ("add --allow X") and then ran the payload or truncated a file.  --allow takes
    only plain data types torchport vouches for; anything else needs --trust, and code-running ones are refused even
    then."""
    import importlib

    tmp, _net = project
    module, _, name = func.rpartition(".")
    target = getattr(importlib.import_module(module), name)
    (tmp / "VICTIM").write_text("keep")
    args = tuple(str(tmp / a) if a == "VICTIM" else a.replace("PWNED", str(tmp / "PWNED")) for a in args)
    torch.save({"x": _Payload(target, args[0]) if len(args) == 1 else _Payloads(target, args)}, tmp / "evil.pt")
    from torchport.ckpt import inspect
    from torchport.core.errors import UsageError

    with pytest.raises(UsageError, match="would run code") as refused:
        inspect(tmp / "evil.pt")
    assert "--allow" not in str(refused.value) and "--trust" not in str(refused.value)
    with pytest.raises(UsageError, match="vouches only for plain data types|runs code"):
        inspect(tmp / "evil.pt", allow=[func])
    with pytest.raises(UsageError, match="runs code"):
        inspect(tmp / "evil.pt", trust=[func])
    assert not (tmp / "PWNED").exists() and (tmp / "VICTIM").read_text() == "keep"


class _Payloads:
    def __init__(self, func, args):
        self.func, self.args = func, args

    def __reduce__(self):
        return (self.func, self.args)


def test_a_global_torchport_cannot_vouch_for_is_suggested_as_trust_not_allow(project):
    tmp, _net = project
    import json as json_

    torch.save({"x": _Payload(json_.loads, "[1, 2]"), "w": torch.ones(2)}, tmp / "other.pt")
    from torchport.ckpt import inspect
    from torchport.core.errors import UsageError

    with pytest.raises(UsageError, match="cannot vouch for") as refused:
        inspect(tmp / "other.pt")
    assert "add --trust json.loads" in str(refused.value) and "--allow" not in str(refused.value)
    assert inspect(tmp / "other.pt", trust=["json.loads"]).tensors == 1


def test_a_checkpoint_that_asks_for_a_buffer_of_its_own_size_is_refused(project):
    """A hostile re-trial: a 1.3 KB pickle of bytearray(2*10**8) or UntypedStorage(10**8) (both in torch's default
    weights-only allowlist) took gigabytes and minutes in `ckpt inspect`."""
    tmp, _net = project
    torch.save({"x": _Payload(bytearray, 2 * 10**8)}, tmp / "big.pt")
    from torchport.ckpt import inspect
    from torchport.core.errors import UsageError

    with pytest.raises(UsageError, match="builtins.bytearray objects of a size it chooses"):
        inspect(tmp / "big.pt")


def test_a_checkpoint_saved_on_another_device_is_described_as_torch_fails_on_it(project, monkeypatch):
    """A new-user trial: storages tagged npu:0 were described with CUDA's error text; the optimizer part counted 0
    of its tensors in --json; an empty scaler state was left out of the listing."""
    tmp, net = project
    opt = torch.optim.Adam(net.parameters())
    net(torch.randn(5, 4)).sum().backward()
    opt.step()
    with monkeypatch.context() as m:
        m.setattr(serialization, "location_tag", lambda storage: "npu:0")
        torch.save({"model": net.state_dict(), "optimizer": opt.state_dict(), "scaler": {}}, tmp / "npu.pt")
    from torchport.ckpt import inspect

    result = inspect(tmp / "npu.pt")
    (problem, _fix), = [p for p in result.problems if "storages saved on" in p[0]]
    assert "tagged with npu:0" in problem and "CUDA" not in problem
    parts = {p.where: p for p in result.parts}
    assert parts["optimizer"].tensors > 0 and parts["scaler"].detail == "{} (empty)"
    assert result.tensors == sum(p.tensors for p in result.parts)
