"""Every spelling of Python after `--` for `run`, `ops record` and `profile` (python, python3.X,
/usr/bin/env python, the interpreter's path, python -u, python -m, the script alone, no `--`), and
what happens when the command names another Python: `run` runs it as a child, `ops record` and
`profile` (which run the script in torchport's process) refuse it in one line."""
import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import ROOT, run_program, shared_value

from torchport.cli import build_parser, parse
from torchport.cli.common import split_program
from torchport.core.command import child_command, is_this_interpreter, require_this_interpreter
from torchport.core.errors import UsageError

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"), PYTHONWARNINGS="ignore")
TORCHPORT = [sys.executable, "-m", "torchport"]
SCRIPT = """
import sys, torch
dev = sys.argv[1] if len(sys.argv) > 1 else "cuda"
torch.manual_seed(0)
model = torch.nn.Linear(4, 1).to(dev)
opt = torch.optim.SGD(model.parameters(), 0.1)
x, y = torch.randn(16, 4).to(dev), torch.randn(16, 1).to(dev)
for i in range(6):
    loss = torch.nn.functional.mse_loss(model(x), y)
    opt.zero_grad(); loss.backward(); opt.step()
    print(f"loss {loss.item():.6f}")
"""
VERSIONED = f"python{sys.version_info[0]}.{sys.version_info[1]}"
SPELLINGS = {  # name: the words before the script (None: -m pkg.mod instead of the script)
    "python": ["python"], VERSIONED: [VERSIONED], "env python": [shutil.which("env") or "/usr/bin/env", "python"],
    "interpreter path": [sys.executable], "python -u": ["python", "-u"], "python -m": None, "script alone": [],
}


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    root = tmp_path_factory.mktemp("interp")
    (root / "train.py").write_text(SCRIPT)
    (root / "pkg").mkdir()
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "mod.py").write_text(SCRIPT)
    return root


def torchport(project, *args):
    return run_program([*TORCHPORT, *args], capture_output=True, text=True, env=ENV, cwd=project, timeout=300)


def command(spelling):
    words = SPELLINGS[spelling]
    return ["python", "-m", "pkg.mod"] if words is None else [*words, "train.py"]


def losses(text):
    return [line for line in text.splitlines() if line.startswith("loss ")]


@pytest.fixture(scope="module")
def reference(project, tmp_path_factory):
    def compute():
        p = subprocess.run([sys.executable, "train.py", "cpu"], capture_output=True, text=True, cwd=project, env=ENV)
        assert p.returncode == 0, p.stderr
        return losses(p.stdout)
    values = shared_value(tmp_path_factory, "interpreters-reference", compute)
    assert len(values) == 6
    return values


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_run(project, reference, spelling):
    p = torchport(project, "run", "--to", "cpu", "--", *command(spelling))
    assert p.returncode == 0, p.stderr
    assert losses(p.stdout) == reference


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_ops_record(project, spelling):
    out = project / f"ops-{spelling.replace(' ', '_')}.json"
    p = torchport(project, "ops", "record", "--to", "cpu", "-o", str(out), "--", *command(spelling))
    assert p.returncode == 0, p.stderr
    data = json.loads(out.read_text())
    assert data["steps"] == 6 and data["total_calls"] > 0
    assert "aten::addmm.default" in {o["op"] for o in data["ops"]}


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("spelling", SPELLINGS)
def test_profile(project, spelling):
    out = project / f"prof-{spelling.replace(' ', '_')}"
    p = torchport(project, "profile", "--to", "cpu", "--steps", "2", "-o", str(out), "--", *command(spelling))
    assert p.returncode == 0, p.stderr
    data = json.loads((out / "profile.json").read_text())
    assert data["steps"]["profiled"] == 2 and data["steps"]["step_by"] == "optimizer.step()"
    assert len(losses(p.stdout)) == 3, "the script ends at its 4th optimizer.step() (wait 1 + warmup 1 + 2)"


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("args", [["ops", "record", "--to", "cpu", "-o", "{out}.json", "train.py"],
                                  ["ops", "record", "-o={out}.json", "--to=cpu", "python", "train.py"],
                                  ["profile", "--to", "cpu", "--steps", "1", "-o", "{out}", "python", "-m", "pkg.mod"]])
def test_forgotten_double_dash_still_works(project, args, tmp_path):
    p = torchport(project, *(a.replace("{out}", str(tmp_path / "o")) for a in args))
    assert p.returncode == 0, p.stderr
    assert (tmp_path / "o.json").is_file() or (tmp_path / "o" / "profile.json").is_file()


def _sub(*words):
    parser = build_parser()
    for w in words:
        parser = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction").choices[w]
    return parser


def test_split_program_reads_own_options_then_the_program():
    """One rule for every command that runs a program: its own options (those taking a value are read from its
    parser), then `--` or the first other word; the rest is the program's, however much it looks like options."""
    profile, record, run = _sub("profile"), _sub("ops", "record"), _sub("run")
    assert split_program(profile, ["-o", "d", "--steps=2", "x.py", "--steps", "9"]) == (
        ["-o", "d", "--steps=2"], ["x.py", "--steps", "9"])
    assert split_program(record, ["-o", "f", "-m", "pkg", "-o", "g"]) == (["-o", "f"], ["-m", "pkg", "-o", "g"])
    assert split_program(profile, ["-o", "d", "--", "python", "x.py", "--", "a"]) == (
        ["-o", "d"], ["python", "x.py", "--", "a"])
    assert split_program(profile, ["--bogus", "x.py"]) == (["--bogus"], ["x.py"])
    assert split_program(run, ["--to", "cpu", "--simulate", "--devices", "2", "train.py", "--to", "x"]) == (
        ["--to", "cpu", "--simulate", "--devices", "2"], ["train.py", "--to", "x"])


@pytest.mark.parametrize("line", [["run", "--to", "cpu"], ["sim", "--to", "npu"], ["ops", "record", "-o", "f"],
                                  ["profile", "-o", "d"], ["debug", "dump", "-o", "d"], ["debug", "nan"]])
def test_every_program_command_parses_with_and_without_the_double_dash(line):
    for program in (["--", "python", "x.py", "-o", "y"], ["python", "x.py", "-o", "y"]):
        args = parse(line + program)
        assert args.program == ["python", "x.py", "-o", "y"], (line, program)
    assert parse(line + ["-m", "pkg.mod", "--flag"]).program == ["-m", "pkg.mod", "--flag"]


# ------------------------------------------------------------------ another Python
@pytest.fixture(scope="module")
def other_python(tmp_path_factory):
    """A Python that is not this one: a venv of it, without torch (same binary, other packages)."""
    venv = tmp_path_factory.mktemp("venv") / "v"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, capture_output=True)
    return str(venv / "bin" / "python")


@pytest.mark.subprocess
def test_which_interpreter_is_this_one(other_python, tmp_path):
    major, minor = sys.version_info[:2]
    for word in ("python", f"python{major}", VERSIONED, sys.executable):
        assert is_this_interpreter(word), word
    for word in ("python2", f"python{major}.{minor + 1}", f"python{major}.{minor}.{sys.version_info[2] + 1}",
                 other_python, str(tmp_path / "python3")):
        assert not is_this_interpreter(word), word
    assert child_command(["python", "-c", "x"]) == [sys.executable, "-c", "x"]
    assert child_command(["/usr/bin/env", "python3", "t.py"]) == [sys.executable, "t.py"]
    assert child_command([other_python, "t.py"]) == [other_python, "t.py"]
    assert child_command(["torchrun", "t.py"]) == ["torchrun", "t.py"]


@pytest.mark.parametrize("argv,message", [
    (["python", "-c", "print(1)"], "not -c CODE"), (["python", "-W", "ignore", "t.py"], "python -W cannot be applied"),
    (["python", "-Xdev", "t.py"], "python -Xdev cannot be applied"), (["python2", "t.py"], "python2 is not the Python"),
    (["/no/such/python3", "t.py"], "interpreter not found: /no/such/python3"),
])
def test_in_process_commands_refuse_what_they_cannot_honour(argv, message):
    with pytest.raises(UsageError, match=message.replace("(", r"\(")):
        require_this_interpreter(argv, "profile")
    require_this_interpreter(["python", "-u", "t.py"], "profile")  # accepted


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.parametrize("args", [["ops", "record", "--to", "cpu", "-o", "{tmp}/o.json"],
                                  ["profile", "--to", "cpu", "-o", "{tmp}/p"]])
def test_ops_record_and_profile_refuse_another_python(project, other_python, tmp_path, args):
    p = torchport(project, *(a.replace("{tmp}", str(tmp_path)) for a in args), "--", other_python, "train.py")
    assert p.returncode == 2, p.stderr
    assert p.stderr.count("\n") == 1 and "Traceback" not in p.stderr
    assert f"{other_python} is not the Python running torchport" in p.stderr
    assert not list(tmp_path.iterdir()), "nothing was written"


@pytest.mark.subprocess
@pytest.mark.torch
def test_run_runs_another_python_as_a_child(project, other_python, tmp_path):
    script = tmp_path / "where.py"
    script.write_text("import sys\nprint('prefix', sys.prefix)\n")
    p = torchport(project, "run", "--to", "cpu", "--", other_python, str(script))
    assert p.returncode == 0, p.stderr
    assert f"prefix {os.path.dirname(os.path.dirname(other_python))}" in p.stdout
    p = torchport(project, "run", "--to", "cpu", "--", other_python, "train.py")  # that venv has no torch
    assert p.returncode == 1 and "No module named 'torch'" in p.stderr
    p = torchport(project, "run", "--to", "cpu", "--", other_python, "-c", "print('ran', 6 * 7)")
    assert p.returncode == 0 and "ran 42" in p.stdout, p.stderr  # before: its binary was read as a script


@pytest.mark.subprocess
@pytest.mark.torch
def test_run_gives_bare_python_programs_this_interpreter(project):
    code = "import sys, torch; print(sys.prefix, torch.ones(1).cuda().device)"
    p = torchport(project, "run", "--to", "cpu", "--", "python", "-c", code)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [sys.prefix, "cpu"]
    p = torchport(project, "run", "--to", "cpu", "--", "python", "-W", "ignore", "train.py")
    assert p.returncode == 0, p.stderr
    assert len(losses(p.stdout)) == 6
