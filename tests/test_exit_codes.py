"""One exit-code policy for every command (docs/cli.md): 0 clean, 1 findings or errors (or a closed
pipe), 2 usage, input or environment (one line on stderr), 3 a torchport bug (one line naming the
command; the traceback only with TORCHPORT_DEBUG=1), 130 interrupted."""
import errno
import json
import os
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest
from conftest import ROOT

from torchport.cli import main

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


def run_cli(*args, cwd=None, env=None):
    p = subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, text=True, cwd=cwd,
                       env=env or ENV, timeout=120)
    return p.returncode, p.stdout, p.stderr


@pytest.fixture
def files(tmp_path):
    """Inputs every command accepts: a CUDA project, a script, an ops file."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nx = torch.ones(2).cuda()\n")
    (tmp_path / "script.py").write_text("print('hi')\n")
    (tmp_path / "ops.json").write_text('["aten::add.Tensor"]')
    (tmp_path / "loop").symlink_to("loop")   # a link to itself: -o there (issue 31 item 9)
    return tmp_path


# ------------------------------------------------------------------ usage errors: 2, one line
USAGE = {
    "no command": [],
    "unknown command": ["bogus"],
    "convert without --to": ["convert", "{proj}"],
    "convert without input": ["convert", "--to", "npu"],
    "convert bad -j": ["convert", "{proj}", "--to", "npu", "-j", "many"],
    "convert two modes": ["convert", "{proj}", "--to", "npu", "--diff", "--dry-run"],
    "analyze missing input": ["analyze", "{missing}"],
    "check without input": ["check", "--to", "npu"],
    "check unknown target": ["check", "{proj}", "--to", "tpu"],
    "port-ext unknown target": ["port-ext", "{proj}", "--to", "tpu"],
    "run without script": ["run", "--to", "cpu"],
    "run missing script": ["run", "--to", "cpu", "{missing}"],
    "sim without target": ["sim", "--", "true"],
    "ops without subcommand": ["ops"],
    "ops check missing file": ["ops", "check", "{missing}", "--to", "npu"],
    "ops record without command": ["ops", "record", "-o", "{tmp}/ops_out.json"],
    "profile without -o": ["profile", "--", "python", "{script}"],
    "profile diff missing": ["profile", "diff", "{missing}", "{missing}"],
    "doctor unknown target": ["doctor", "--to", "tpu"],
    "explain nothing": ["explain"],
    "explain missing log": ["explain", "--file", "{missing}"],
    "compare missing": ["compare", "{missing}", "{missing}"],
    "rules unknown option": ["rules", "--bogus"],
    "targets extra argument": ["targets", "extra"],
    "convert -o a link loop": ["convert", "{proj}", "--to", "npu", "-o", "{tmp}/loop"],
    "migrate -o a link loop": ["migrate", "{proj}", "--to", "npu", "-o", "{tmp}/loop"],
    "port-ext -o a link loop": ["port-ext", "{proj}", "--to", "musa", "-o", "{tmp}/loop"],
    "convert -o empty": ["convert", "{proj}", "--to", "npu", "-o", ""],
    "migrate -o empty": ["migrate", "{proj}", "--to", "npu", "-o", ""],
    "analyze -o empty": ["analyze", "{proj}", "-o", ""],
    "migrate --verify a missing program": ["migrate", "{proj}", "--to", "npu", "-o", "{tmp}/never", "--verify", "--",
                                           "no-such-program-xyz"],
}


def fill(args, files):
    names = {"proj": files / "proj", "missing": files / "nope", "script": files / "script.py",
             "ops": files / "ops.json", "tmp": files}
    return [a.format(**{k: str(v) for k, v in names.items()}) for a in args]


@pytest.mark.torch
@pytest.mark.parametrize("args", USAGE.values(), ids=USAGE.keys())
def test_usage_error_is_2_with_one_line(files, capsys, args):
    assert main(fill(args, files)) == 2
    out, err = capsys.readouterr()
    assert err.startswith("torchport: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err and out == ""
    assert not (files / "never").exists(), "refused before anything was written"
    assert not (files / "proj_npu").exists() or "-o" not in args


@pytest.mark.subprocess
def test_usage_error_through_the_real_entry_point(files):
    code, out, err = run_cli("convert", str(files / "proj"))
    assert code == 2 and err == "torchport: error: the following arguments are required: -t/--to " \
                                "(see `torchport convert --help`)\n" and out == ""
    code, out, err = run_cli("--version")
    assert code == 0 and out.startswith("torchport ")


# ------------------------------------------------------------------ a failure inside each command
# (the command as typed, the function it calls that is made to fail)
COMMANDS = {
    "convert": (["convert", "{proj}", "--to", "npu", "--dry-run"], "torchport.commands.convert.convert"),
    "migrate": (["migrate", "{proj}", "--to", "npu", "-o", "{tmp}/migrated"], "torchport.commands.migrate.migrate"),
    "analyze": (["analyze", "{proj}", "--json"], "torchport.commands.analyze.analyze"),
    "check": (["check", "{proj}", "--to", "npu"], "torchport.commands.check.check"),
    "port-ext": (["port-ext", "{proj}", "--to", "musa", "--diff"], "torchport.commands.port.port"),
    "run": (["run", "--to", "cpu", "{script}"], "torchport.runtime.launch.run"),
    "sim": (["sim", "--to", "npu", "--", "true"], "torchport.sim.launch.run"),
    "ops check": (["ops", "check", "{ops}", "--to", "npu"], "torchport.kb.operators.load_ops_file"),
    "ops record": (["ops", "record", "-o", "{tmp}/rec.json", "--", "python", "{script}"],
                   "torchport.debug.record_cli.record_script"),
    "profile": (["profile", "-o", "{tmp}/prof", "--", "python", "{script}"], "torchport.profile.profile_script"),
    "profile diff": (["profile", "diff", "{tmp}", "{tmp}"], "torchport.profile.diff.load"),
    "doctor": (["doctor", "--to", "cpu"], "torchport.doctor.run_checks"),
    "explain": (["explain", "CUDA error: out of memory"], "torchport.doctor.explain.explain"),
    "compare": (["compare", "{tmp}", "{tmp}"], "torchport.debug.runs.compare_runs"),
    "export onnx": (["export", "onnx", "--model", "m:f", "--input-shape", "1", "-o", "{tmp}/m.onnx"],
                    "torchport.export.export_onnx"),
    "rules": (["rules"], "torchport.report.rules_doc.rules_table"),
    "targets": (["targets"], "torchport.cli.targets.target_rows"),
}


def fail_with(monkeypatch, target: str, error: BaseException):
    if target == "torchport.profile.profile_script":
        pytest.importorskip("torch")

    def failing(*args, **kwargs):
        raise error
    monkeypatch.setattr(target, failing)


@pytest.mark.torch
@pytest.mark.parametrize("name", COMMANDS)
def test_internal_error_is_3_with_one_line_naming_the_command(files, capsys, monkeypatch, name):
    args, target = COMMANDS[name]
    monkeypatch.delenv("TORCHPORT_DEBUG", raising=False)
    fail_with(monkeypatch, target, RuntimeError("boom"))
    assert main(fill(args, files)) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err, err
    assert err.startswith(f"torchport: internal error in `{name}`: RuntimeError: boom")
    assert "TORCHPORT_DEBUG=1" in err


@pytest.mark.torch
@pytest.mark.parametrize("name", ["convert", "ops check", "profile diff"])
def test_torchport_debug_adds_the_traceback(files, capsys, monkeypatch, name):
    args, target = COMMANDS[name]
    monkeypatch.setenv("TORCHPORT_DEBUG", "1")
    fail_with(monkeypatch, target, RuntimeError("boom"))
    assert main(fill(args, files)) == 3
    err = capsys.readouterr().err
    assert err.startswith("Traceback") and "RuntimeError: boom" in err
    assert err.splitlines()[-1].startswith(f"torchport: internal error in `{name}`")


@pytest.mark.subprocess
def test_internal_error_reaches_the_shell_as_3(files):
    code = ("import sys, torchport.commands.convert as api\n"
            "def boom(*a, **k): raise RuntimeError('boom')\n"
            "api.convert = boom\n"
            "from torchport.cli import main\n"
            "sys.exit(main(sys.argv[1:]))\n")
    env = {k: v for k, v in ENV.items() if k != "TORCHPORT_DEBUG"}
    p = subprocess.run([sys.executable, "-c", code, "convert", str(files / "proj"), "--to", "npu"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 3 and len(p.stderr.splitlines()) == 1 and "Traceback" not in p.stderr


@pytest.mark.torch
@pytest.mark.parametrize("name", COMMANDS)
def test_interrupt_is_130_with_one_line(files, capsys, monkeypatch, name):
    args, target = COMMANDS[name]
    fail_with(monkeypatch, target, KeyboardInterrupt())
    assert main(fill(args, files)) == 130
    assert capsys.readouterr().err == "torchport: interrupted\n"


@pytest.mark.torch
@pytest.mark.parametrize("name", COMMANDS)
def test_broken_pipe_is_1_and_quiet(files, capsys, monkeypatch, name):
    args, target = COMMANDS[name]
    fail_with(monkeypatch, target, BrokenPipeError(errno.EPIPE, "Broken pipe"))
    assert main(fill(args, files)) == 1
    assert capsys.readouterr().err == ""


@pytest.mark.torch
@pytest.mark.parametrize("name", COMMANDS)
def test_environment_error_is_2_naming_the_path(files, capsys, monkeypatch, name):
    args, target = COMMANDS[name]
    fail_with(monkeypatch, target, OSError(errno.ENOSPC, "No space left on device", "/out/report.md"))
    assert main(fill(args, files)) == 2
    assert capsys.readouterr().err == "torchport: error: /out/report.md: No space left on device\n"


def test_read_only_report_folder_is_2_not_a_bug(files, capsys, monkeypatch):
    def read_only(result, folder):
        raise PermissionError(errno.EROFS, "Read-only file system", str(Path(folder) / "report.md"))
    monkeypatch.setattr("torchport.report.write_all", read_only)
    out = files / "out"
    assert main(["convert", str(files / "proj"), "--to", "npu", "-o", str(out)]) == 2
    err = capsys.readouterr().err
    assert err == f"torchport: error: {files / 'out_report' / 'report.md'}: Read-only file system\n"


def test_os_error_without_a_path_says_why(files, capsys, monkeypatch):
    fail_with(monkeypatch, "torchport.commands.convert.convert", OSError(errno.ENOSPC, "No space left on device"))
    assert main(["convert", str(files / "proj"), "--to", "npu"]) == 2
    assert capsys.readouterr().err == "torchport: error: No space left on device\n"


@pytest.mark.subprocess
def test_full_disk_for_check_output(files):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    code, out, err = run_cli("check", str(files / "proj"), "--to", "npu", "-o", "/dev/full")
    assert code == 2 and err == "torchport: error: cannot write report /dev/full: No space left on device\n"
    assert stat.S_ISCHR(os.stat("/dev/full").st_mode), "the device was replaced by a file"


# ------------------------------------------------------------------ the real pipe, the real Ctrl-C
def read_one_line_and_close(args, unbuffered: bool):
    """Start torchport, read one line of its output, close the pipe: (exit code, stderr)."""
    env = {k: v for k, v in ENV.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    p = subprocess.Popen([sys.executable, "-m", "torchport", *args], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env)
    p.stdout.readline()
    p.stdout.close()
    err = p.stderr.read().decode()
    p.stderr.close()
    return p.wait(timeout=120), err


@pytest.fixture
def many_findings(tmp_path):
    """A project whose outputs are much larger than a pipe's buffer (64 KiB)."""
    proj = tmp_path / "many"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\n" + "torch.ones(2).cuda()\n" * 3000)
    return proj


@pytest.mark.subprocess
@pytest.mark.parametrize("unbuffered", [False, True], ids=["buffered", "PYTHONUNBUFFERED"])
@pytest.mark.parametrize("args", [["check", "{p}", "--to", "npu"], ["convert", "{p}", "--to", "npu", "--diff"],
                                  ["analyze", "{p}", "--to", "npu", "--json", "-o", "{p}_a"]],
                         ids=["check", "convert --diff", "analyze --json"])
def test_head_closes_the_pipe(many_findings, args, unbuffered):
    code, err = read_one_line_and_close([a.format(p=many_findings) for a in args], unbuffered)
    assert code == 1 and err == "", err  # no traceback, no "Exception ignored"


@pytest.mark.subprocess
def test_small_output_into_a_closed_pipe(tmp_path):
    """The pipe is closed before torchport writes at all: the error comes at its last flush."""
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([sys.executable, "-m", "torchport", "targets"], stdout=w, stderr=subprocess.PIPE,
                       env=ENV, timeout=120)
    os.close(w)
    assert p.returncode == 1 and p.stderr == b""


def wait_until_blocked_on_a_pipe(pid: int, timeout: float = 30) -> None:
    wchan = Path(f"/proc/{pid}/wchan")
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if not wchan.exists():
            time.sleep(3)  # no /proc: give it time to get there
            return
        if "pipe" in wchan.read_text():
            return
        time.sleep(0.05)


@pytest.mark.subprocess
def test_ctrl_c_is_130_with_one_line(tmp_path):
    p = subprocess.Popen([sys.executable, "-m", "torchport", "explain", "--file", "/dev/stdin"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV)
    wait_until_blocked_on_a_pipe(p.pid)
    p.send_signal(signal.SIGINT)
    out, err = p.communicate(timeout=60)
    p.stdin.close()
    assert p.returncode == 130 and err == b"torchport: interrupted\n"


def _wait_for_workers(p, limit: float = 20.0) -> None:
    """Until `p` has started a child (its parallel run is under way), at most `limit` seconds.  A fixed sleep
    raced the interpreter's start on a loaded machine: SIGINT before Python installs its handler kills the
    process outright (-2), which says nothing about torchport."""
    deadline = time.monotonic() + limit
    proc = Path("/proc")
    while time.monotonic() < deadline and p.poll() is None:
        if not proc.is_dir():          # no /proc: the old fixed wait
            time.sleep(1.0)
            return
        for status in proc.glob("[0-9]*/stat"):
            try:
                fields = status.read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == p.pid:   # its parent
                time.sleep(0.2)           # and a little work
                return
        time.sleep(0.05)


@pytest.mark.subprocess
def test_ctrl_c_during_a_parallel_run_stops_quietly(tmp_path):
    proj = tmp_path / "big"
    proj.mkdir()
    body = "import torch\n\n\ndef f(x):\n    return x.cuda(), torch.cuda.device_count()\n" + "# pad\n" * 40000
    for i in range(80):
        (proj / f"m{i}.py").write_text(body)
    for _ in range(3):
        p = subprocess.Popen([sys.executable, "-m", "torchport", "convert", str(proj), "--to", "npu", "--dry-run",
                              "-j", "4"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=ENV,
                             start_new_session=True)
        _wait_for_workers(p)
        os.killpg(p.pid, signal.SIGINT)  # as a terminal's Ctrl-C does: to every process of the group
        try:
            _, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.communicate()
            pytest.fail("torchport hung after Ctrl-C")
        if p.returncode == 0:
            continue  # it finished before the signal came
        assert p.returncode == 130 and err == b"torchport: interrupted\n", err.decode()[-2000:]


# ------------------------------------------------------------------ findings and per-file errors: 1
def test_convert_and_port_ext_exit_1_on_a_file_they_could_not_process(files, capsys):
    proj = files / "proj"
    (proj / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    for mode in ("--dry-run", "--diff", "--json"):
        assert main(["convert", str(proj), "--to", "npu", mode]) == 1, mode
    out = capsys.readouterr().out
    assert "  error: bad.py:2: syntax error" in out
    ext = files / "ext"
    ext.mkdir()
    (ext / "k.cu").write_text("__global__ void k() {}\n")
    assert main(["port-ext", str(ext), "--to", "musa", "--diff"]) == 0
    (ext / "k.mu").write_text("// mine: k.cu cannot be renamed to k.mu\n")
    for mode in ("--diff", "--json"):
        assert main(["port-ext", str(ext), "--to", "musa", mode]) == 1, mode
    assert main(["port-ext", str(ext), "--to", "musa", "-o", str(files / "ext_musa"), "--force"]) == 1
    assert "  error: k.cu:1: not ported" in capsys.readouterr().out


def test_analyze_exits_1_on_a_file_it_could_not_analyse(files, capsys):
    proj = files / "proj"
    assert main(["analyze", str(proj), "--to", "npu", "--json"]) == 0
    (proj / "bad.py").write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    assert main(["analyze", str(proj), "--to", "npu", "-o", str(files / "a"), "--force"]) == 1
    assert "  error: bad.py:2: syntax error" in capsys.readouterr().out
    assert main(["analyze", str(proj), "--to", "npu", "--json"]) == 1
    json.loads(capsys.readouterr().out)


def test_the_documented_codes_are_the_policys():
    """docs/cli.md's table and cli/exits.py name the same codes."""
    from torchport.cli import exits

    table = (ROOT / "docs" / "cli.md").read_text(encoding="utf-8").split("## Exit codes", 1)[1].split("\n## ", 1)[0]
    documented = {int(line.split("|")[1]) for line in table.splitlines() if line.split("|")[1:2] != []
                  and line.split("|")[1].strip().isdigit()}
    assert documented == {exits.OK, exits.FINDINGS, exits.USAGE, exits.INTERNAL, exits.INTERRUPTED}
