"""`torchport convert` end to end: layout, safety, modes, errors, the Python API."""
import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, tree_digest

import torchport
from torchport.cli import main


def run_cli(*args, cwd=None):
    """The real console entry point in a subprocess: (exit code, stdout, stderr)."""
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, text=True, cwd=cwd, env=env)
    return p.returncode, p.stdout, p.stderr


@pytest.mark.subprocess
def test_default_layout_mirrors_the_tree(project):
    before = tree_digest(project)
    code, out, err = run_cli("convert", str(project), "--to", "npu")
    assert code == 0, err
    dst = project.parent / "proj_npu"
    reports = project.parent / "proj_npu_report"
    assert tree_digest(project) == before, "the input must not change"
    after = tree_digest(dst)
    assert set(after) == set(before), "every file is mirrored"
    for rel, (digest, mode) in before.items():
        if rel.endswith((".py", ".sh")) and rel in ("train.py", "run.sh"):
            assert after[rel][0] != digest and after[rel][1] == mode
        else:
            assert after[rel] == (digest, mode), rel  # untouched files are byte-identical, modes kept
    assert "dist.init_process_group(backend='hccl')" in (dst / "train.py").read_text()
    assert "export ASCEND_RT_VISIBLE_DEVICES=0" in (dst / "run.sh").read_text()
    assert "configure_nccl" in (dst / "pkg" / "util.py").read_text()
    for name in ("report.md", "change_list.csv", "unsupported_api.csv", "report.json", "torchport.log"):
        assert (reports / name).is_file()
    assert not any(p.name.startswith("report") for p in dst.rglob("*")), "reports never go inside the tree"
    assert "proj_npu_report" in out


def test_python_api_returns_what_the_report_says(project, tmp_path):
    result = torchport.convert(project, target="mlu", output=tmp_path / "out")
    report = json.loads((tmp_path / "out_report" / "report.json").read_text())
    assert report["schema_version"] == 1
    assert report["summary"] == result.summary()
    assert len(report["findings"]) == len(result.findings) > 0
    assert report["summary"]["changes"] == sum(f.is_change for f in result.findings)


@pytest.mark.subprocess
def test_single_file(project):
    code, _, err = run_cli("convert", str(project / "train.py"), "--to", "xpu", "-o", str(project / "train_xpu.py"))
    assert code == 0, err
    out = project / "train_xpu.py"
    assert "torch.ones(2).xpu()" in out.read_text()
    assert (project / "train_xpu_report" / "report.md").is_file()
    out.rename(project.parent / "train_xpu.py")
    before = sorted(p.name for p in project.iterdir())
    code, printed, err = run_cli("convert", str(project / "train.py"), "--to", "xpu")
    assert code == 0, err
    assert printed == (project.parent / "train_xpu.py").read_text(), "without -o the same text, printed"
    assert sorted(p.name for p in project.iterdir()) == before, "and nothing written beside the input"


def test_syntax_error_is_copied_and_the_run_goes_on(project, tmp_path):
    bad = project / "bad.py"
    bad.write_text("import torch\ndef f(:\n    torch.cuda.synchronize()\n")
    result = torchport.convert(project, "npu", tmp_path / "o")
    assert (tmp_path / "o" / "bad.py").read_bytes() == bad.read_bytes()
    errors = [f for f in result.findings if f.action == "error"]
    assert [(f.file, f.line) for f in errors] == [("bad.py", 2)]
    assert "torch.npu.device_count()" in (tmp_path / "o" / "train.py").read_text()
    md = (tmp_path / "o_report" / "report.md").read_text()
    assert "## Errors (1)" in md and "bad.py:2" in md


@pytest.mark.subprocess
@pytest.mark.parametrize("args,message", [
    (["convert", "{missing}", "--to", "npu"], "input not found"),
    (["convert", "{proj}", "--to", "tpu"], "unknown target 'tpu'"),
    (["convert", "{proj}", "--to", "npu", "-o", "{proj}/sub"], "inside the input"),
    (["convert", "{proj}", "--to", "npu", "-o", "{proj}"], "--in-place"),
    (["convert", "{proj}", "--to", "npu", "-o", "{existing}"], "already exists"),
    (["convert", "{proj}", "--to", "npu", "-r", "{missing}"], "cannot read rule file"),
    (["convert", "{proj}", "--to", "npu", "-l", "nothere.py"], "launch script not found"),
])
def test_bad_input_gives_one_line_and_exit_2(project, tmp_path, args, message):
    existing = tmp_path / "existing"
    existing.mkdir()
    (existing / "keep.txt").write_text("mine")
    before = tree_digest(project)
    fill = {"missing": str(tmp_path / "nope"), "proj": str(project), "existing": str(existing)}
    code, out, err = run_cli(*[a.format(**fill) for a in args])
    assert code == 2
    assert message in err and err.count("\n") == 1 and "Traceback" not in err
    assert tree_digest(project) == before
    assert (existing / "keep.txt").read_text() == "mine"


def test_force_writes_into_an_existing_output(project, tmp_path):
    out = tmp_path / "o"
    out.mkdir()
    (out / "mine.txt").write_text("mine")
    assert main(["convert", str(project), "--to", "npu", "-o", str(out), "--force"]) == 0
    assert (out / "mine.txt").read_text() == "mine" and (out / "train.py").exists()


@pytest.mark.subprocess
def test_modes_are_mutually_exclusive(project):
    code, _, err = run_cli("convert", str(project), "--to", "npu", "--diff", "--in-place")
    assert code == 2 and "not allowed with" in err


def test_symlinks_are_not_followed_out_of_the_tree(project, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("import torch\ntorch.cuda.synchronize()\n")
    os.symlink(outside, project / "linked_dir")
    os.symlink(outside / "secret.py", project / "linked.py")
    os.symlink("train.py", project / "alias.py")
    result = torchport.convert(project, "npu", tmp_path / "o")
    skipped = {r.path for r in result.files if r.status == "skipped"}
    assert skipped == {"linked_dir", "linked.py"}
    assert not (tmp_path / "o" / "linked_dir").exists() and not (tmp_path / "o" / "linked.py").exists()
    assert os.readlink(tmp_path / "o" / "alias.py") == "train.py"
    assert (outside / "secret.py").read_text().endswith("torch.cuda.synchronize()\n")


@pytest.mark.subprocess
def test_in_place_keeps_a_backup(project):
    original = (project / "train.py").read_bytes()
    code, out, _ = run_cli("convert", str(project), "--to", "npu", "--in-place")
    assert code == 0
    backup = project.parent / "proj.torchport-backup"
    assert (backup / "train.py").read_bytes() == original
    assert not (backup / "data.txt").exists(), "only changed files are backed up"
    assert "torch.npu.device_count()" in (project / "train.py").read_text()
    assert (project.parent / "proj_npu_report" / "report.md").is_file()
    assert str(backup) in out


@pytest.mark.subprocess
def test_diff_and_dry_run_write_nothing(project):
    parent_before = sorted(p.name for p in project.parent.iterdir())
    before = tree_digest(project)
    code, out, _ = run_cli("convert", str(project), "--to", "npu", "--diff")
    assert code == 0
    assert "--- a/train.py" in out and "+import torch_npu" in out and "-    x = torch.ones(2).cuda()" in out
    code, out, _ = run_cli("convert", str(project), "--to", "npu", "--dry-run")
    assert code == 0 and "changes" in out
    assert sorted(p.name for p in project.parent.iterdir()) == parent_before
    assert tree_digest(project) == before


def test_exclude_and_launch(project, tmp_path):
    (project / "entry.py").write_text("import torch\nprint(torch.__version__)\n")
    result = torchport.convert(project, "npu", tmp_path / "o", exclude=["pkg/*", "train.py"], launch="entry.py")
    statuses = {r.path: r.status for r in result.files}
    assert statuses["train.py"] == "excluded" and statuses["pkg/util.py"] == "excluded"
    assert (tmp_path / "o" / "train.py").read_bytes() == (project / "train.py").read_bytes()
    assert (tmp_path / "o" / "entry.py").read_text() == "import torch\nimport torch_npu  # noqa: F401\nprint(torch.__version__)\n"


@pytest.mark.subprocess
def test_json_output_and_no_progress_bar_off_a_tty(project, tmp_path):
    code, out, err = run_cli("convert", str(project), "--to", "musa", "-o", str(tmp_path / "o"), "--json")
    assert code == 0 and "\r" not in err
    data = json.loads(out)
    assert data["target"] == "musa" and data["summary"]["files"] == 6


@pytest.mark.subprocess
def test_converter_never_imports_torch(project, tmp_path):
    code = ("import sys, torchport; torchport.convert(sys.argv[1], 'npu', sys.argv[2]); "
            "bad = [m for m in sys.modules if m == 'torch' or m.startswith(('torch.', 'torch_'))]; "
            "assert not bad, bad")
    p = subprocess.run([sys.executable, "-c", code, str(project), str(tmp_path / "o")],
                       env=dict(os.environ, PYTHONPATH=str(ROOT / "src")), capture_output=True, text=True)
    assert p.returncode == 0, p.stderr


@pytest.mark.subprocess
def test_parallel_and_serial_runs_agree(tmp_path):
    src = tmp_path / "many"
    src.mkdir()
    body = "import torch\n\n\ndef f{i}(x):\n    return x.cuda(), torch.cuda.device_count(), 'cuda:{i}'\n" + "# pad\n" * 4000
    for i in range(40):
        (src / f"m{i}.py").write_text(body.format(i=i))
    from torchport.core import parallel

    old = parallel.PARALLEL_MIN_BYTES
    parallel.PARALLEL_MIN_BYTES = 1
    try:
        a = torchport.convert(src, "npu", tmp_path / "a", jobs=2)
    finally:
        parallel.PARALLEL_MIN_BYTES = old
    b = torchport.convert(src, "npu", tmp_path / "b", jobs=1)
    assert [f.to_dict() for f in a.findings] == [f.to_dict() for f in b.findings]
    assert tree_digest(tmp_path / "a") == tree_digest(tmp_path / "b")


@pytest.mark.subprocess
def test_rules_and_targets_commands():
    code, out, _ = run_cli("rules")
    assert code == 0 and "TP101" in out and "TP801" in out
    code, out, _ = run_cli("targets", "--json")
    assert {t["name"] for t in json.loads(out)} >= {"npu", "mlu", "musa", "xpu", "mps", "cpu", "accelerator"}
    code, out, err = run_cli()
    assert code == 2


@pytest.mark.subprocess
def test_progress_bar_only_on_a_tty(project, tmp_path):
    import pty

    master, slave = pty.openpty()
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.Popen([sys.executable, "-m", "torchport", "convert", str(project), "--to", "npu",
                          "-o", str(tmp_path / "o")], stdout=subprocess.PIPE, stderr=slave, env=env)
    os.close(slave)
    out, _ = p.communicate(timeout=60)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 4096)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert p.returncode == 0
    assert b"\r[" in seen and b"6/6 files" in seen
    assert b"\r" not in out


# ------------------------------------------------------------------ the command line itself (torchport.cli)
# A usage error is one line on stderr, naming the wrong word and the closest known one, and exit 2.
@pytest.mark.subprocess
@pytest.mark.parametrize("args, line", [
    (["convert", "--too", "npu", "x"], "unknown option --too (did you mean --to?)"),           # unknown option
    (["convert", "x", "--to", "npu", "--dyr=o"], "unknown option --dyr (see `torchport convert --help`)"),
    (["--verison"], "unknown option --verison (did you mean --version?)"),
    (["conver", "x"], "unknown command 'conver' (did you mean convert?)"),                      # unknown command
    (["ops", "chek", "f.json"], "unknown ops command 'chek' (did you mean check?)"),
    (["debug", "nann", "--", "python", "x.py"], "unknown debug command 'nann' (did you mean nan?)"),
    (["convert", "x", "--to", "ascnd"], "unknown target 'ascnd' (did you mean npu?)"),          # bad --to
    (["check", "x", "--to", "cambrcon"], "unknown target 'cambrcon' (did you mean mlu?)"),
    (["analyze", "x", "--to", "npu,moorethread"], "unknown target 'moorethread' (did you mean musa?)"),
    (["convert", "x"], "the following arguments are required: -t/--to (see `torchport convert --help`)"),  # missing
    (["run", "--policy", "sometimes", "x.py"], "invalid choice: 'sometimes'"),                  # bad choice
    (["targets", "npu"], "unexpected argument 'npu' (see `torchport targets --help`)"),
])
def test_usage_error_is_one_line_with_a_hint(args, line):
    code, out, err = run_cli(*args)
    assert code == 2 and out == "", err
    assert err.count("\n") == 1 and err.startswith("torchport: error: ") and line in err, err


@pytest.mark.subprocess
def test_help_is_argparse_usage_and_exit_0():
    code, out, err = run_cli("convert", "--help")
    assert code == 0 and err == "" and out.startswith("usage: torchport convert ") and "--to TARGET" in out
    code, out, err = run_cli("--help")
    assert code == 0 and "convert" in out and "port-ext" in out


@pytest.mark.parametrize("line", [["convert", "x"], ["check", "x"], ["port-ext", "x"], ["doctor"], ["explain", "e"],
                                  ["ops", "check", "f.json"], ["run", "--", "x.py"], ["sim", "--", "x.py"],
                                  ["profile", "-o", "d", "--", "x.py"], ["debug", "nan", "--", "x.py"]])
def test_every_to_takes_vendor_aliases_in_any_case(line):
    from torchport.cli import parse

    for spelling, name in (("Ascend", "npu"), ("huawei", "npu"), ("CAMBRICON", "mlu"), ("moorethreads", "musa"),
                           ("npu", "npu")):
        head = line[:2] if line[:2] in (["ops", "check"], ["debug", "nan"]) else line[:1]
        assert parse(head + ["--to", spelling] + line[len(head):]).to == name, (line, spelling)


def test_analyze_to_takes_a_list_of_aliases():
    from torchport.cli import parse

    assert parse(["analyze", "x", "--to", "ascend, Cambricon,cpu"]).to == "npu,mlu,cpu"


@pytest.mark.subprocess
@pytest.mark.parametrize("line", [["run"], ["sim"], ["profile", "-o", "d"], ["ops", "record", "-o", "f"],
                                  ["debug", "dump", "-o", "d"], ["debug", "nan"]])
@pytest.mark.parametrize("dash", [True, False])
def test_the_program_keeps_its_own_options(line, dash):
    """The command's options come first; from `--` (or, without it, the first other word) every word is the
    program's, even one spelled like the command's own option; an unknown option before it is a usage error."""
    from torchport.cli import parse

    program = ["python", "train.py", "--to", "x", "-o", "y", "--", "z"]
    args = parse(line + ["--to", "mlu"] + (["--"] if dash else []) + program)
    assert args.to == "mlu" and args.program == program
    code, out, err = run_cli(*line, "--tooo", "mlu", *(["--"] if dash else []), "python", "train.py")
    assert code == 2 and err == "torchport: error: unknown option --tooo (did you mean --to?)\n", err


ENGINES = ("api", "converter", "porting", "analyze", "check", "runtime", "sim", "debug", "profile", "doctor",
           "report", "kb")


@pytest.mark.subprocess
@pytest.mark.parametrize("argv", [["--version"], ["targets"], ["convert", "--help"], ["run", "--help"]])
def test_fast_commands_import_no_engine(argv):
    """Building the parser and running `--version`, `targets` or a command's --help imports no engine (the start-up
    time of the command line); each command imports its engine when it runs."""
    code = ("import sys, contextlib, io\nfrom torchport.cli import main\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('torchport'))))\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True, env=env)
    loaded = p.stdout.split()
    assert p.returncode == 0 and "torchport.cli" in loaded, p.stderr
    engines = [m for m in loaded if (m.split(".") + [""])[1] in ENGINES]
    assert engines == [], engines


@pytest.mark.subprocess
def test_a_command_imports_its_engine_when_it_runs(project, tmp_path):
    """The check above could fail: running convert does load the converter."""
    code = ("import sys\nfrom torchport.cli import main\nmain(sys.argv[1:])\n"
            "print('torchport.converter' in sys.modules, 'torchport.runtime' in sys.modules)\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-c", code, "convert", str(project), "--to", "npu", "--dry-run", "--json"],
                       capture_output=True, text=True, env=env)
    assert p.stdout.rstrip().endswith("True False"), p.stderr
