"""Hostile trees and a hostile disk: nothing the user owns is lost, nothing hangs, every failure is a file's
error with its reason (issue 14's data-loss, hang and isolation cases, each reproduced here first)."""
from __future__ import annotations

import ctypes
import errno
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from torchport.api import convert
from torchport.api import port_ext as port
from torchport.core import files, writes
from torchport.core.errors import UsageError

ROOT = Path(__file__).resolve().parents[1]
CUDA = b"import torch\nLR = 0.0001\nx = torch.zeros(2).cuda()\n"
KERNEL = b"#include <cuda_runtime.h>\nvoid f(float* p) { cudaMalloc(&p, 4); }\n"


def run_cli(*args, timeout=120, preexec_fn=None):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, text=True, env=env,
                       timeout=timeout, preexec_fn=preexec_fn)
    return p.returncode, p.stdout, p.stderr


def start_cli(*args):
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    return subprocess.Popen([sys.executable, "-m", "torchport", *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=env)


def drop_privileges():
    """For a child of root: clear the capability bounding set, so the program it runs has root's uid but
    not its power to ignore file permissions (CI runs as root; a permission test must mean something)."""
    libc = ctypes.CDLL(None, use_errno=True)
    for cap in range(64):
        if libc.prctl(24, cap, 0, 0, 0) != 0:  # PR_CAPBSET_DROP; EINVAL past the last capability
            break


def unprivileged():
    """preexec_fn that takes root's privileges away; None for an ordinary user (it has none)."""
    if os.geteuid() != 0:
        return None
    return drop_privileges


def make_project(root: Path, files_: dict) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    for rel, data in files_.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
    return root


def converted(data: bytes = CUDA) -> bytes:
    """What convert --to cpu makes of data (written by a run into a scratch folder)."""
    return data.replace(b"torch.zeros(2).cuda()", b'torch.zeros(2).to("cpu")')


# ------------------------------------------------------------------ data loss 1: --force through symlinks
@pytest.mark.subprocess
@pytest.mark.parametrize("command", ["convert", "port-ext"])
def test_force_never_writes_through_a_symlink_in_the_output(tmp_path, command):
    name, data, to = ("a.py", CUDA, "cpu") if command == "convert" else ("a.cpp", KERNEL, "musa")
    src = make_project(tmp_path / "p", {name: data, f"sub/{name}": data, "hard.txt": b"new\n"})
    keep = make_project(tmp_path / "keep", {name: b"KEEP\n", "hard.txt": b"KEEP\n", "report.md": b"KEEP\n"})
    out = tmp_path / "o"
    out.mkdir()
    (out / name).symlink_to(keep / name)
    (out / "sub").symlink_to(keep)  # a folder of the output that leads out of it
    os.link(keep / "hard.txt", out / "hard.txt")
    reports = tmp_path / "r"
    reports.mkdir()
    (reports / ("report.md" if command == "convert" else "port_report.md")).symlink_to(keep / "report.md")
    code, _out, err = run_cli(command, str(src), "--to", to, "-o", str(out), "--force", "--report-dir", str(reports))
    for kept in keep.iterdir():
        assert kept.read_bytes() == b"KEEP\n", f"wrote through a link into {kept.name}, outside the output"
    assert sorted(p.name for p in keep.iterdir()) == sorted([name, "hard.txt", "report.md"])
    assert (out / "hard.txt").read_bytes() == b"new\n"
    assert not (out / name).is_symlink() and (out / name).read_bytes() != b"KEEP\n"
    assert code == 1, err  # sub/a.* could not be written where it belongs: that file's error
    report = reports / ("report.json" if command == "convert" else "port_report.json")
    errors = [f for f in json.loads(report.read_text())["findings"] if f["action"] == "error"]
    assert [f["file"] for f in errors] == [f"sub/{name}"] and "symlink" in errors[0]["message"]


# ------------------------------------------------------------------ data loss 2: links back into the input
@pytest.mark.subprocess
@pytest.mark.parametrize("how", ["absolute", "out-and-back"])
def test_links_in_the_input_point_into_the_output_tree(tmp_path, how):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    target = (src / "a.py").resolve() if how == "absolute" else Path("../p/a.py")
    (src / "link.py").symlink_to(target)
    out = tmp_path / "o"
    for _attempt in range(2):  # the second run (--force) used to write the input through the copied link
        code, _out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(out), "--force")
        assert code == 0, err
    assert (src / "a.py").read_bytes() == CUDA, "the input was written through a link in the output"
    assert (out / "link.py").is_symlink()
    assert (out / "link.py").resolve() == (out / "a.py").resolve()


# ------------------------------------------------------------------ data loss 3: full disk in place
class _FullDisk:
    """A file object that takes half of what it is given, then fails as a full disk does."""

    def __init__(self, f):
        self.f = f

    def write(self, data):
        self.f.write(data[: len(data) // 2])
        raise OSError(errno.ENOSPC, "No space left on device")

    def __getattr__(self, name):
        return getattr(self.f, name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.f.close()


def test_full_disk_in_place_leaves_every_original_whole(tmp_path, monkeypatch):
    src = make_project(tmp_path / "p", {"a.py": CUDA, "b.py": CUDA.replace(b"LR", b"MOMENTUM")})
    real_fdopen = os.fdopen
    monkeypatch.setattr(writes.os, "fdopen", lambda fd, *a, **k: _FullDisk(real_fdopen(fd, *a, **k)))
    result = convert(src, "cpu", in_place=True, jobs=1, write_reports=False)
    assert (src / "a.py").read_bytes() == CUDA, "the original was truncated"
    assert {r.path: r.status for r in result.files} == {"a.py": "error", "b.py": "error"}
    assert all("No space left on device" in f.message and "unchanged" in f.message
               for f in result.findings if f.action == "error")
    assert not list(src.glob(".torchport-tmp-*")), "a temporary file was left behind"
    monkeypatch.undo()  # space again: the rerun converts (it used to call the truncated file "unchanged")
    again = convert(src, "cpu", in_place=True, jobs=1, write_reports=False)
    assert {r.path: r.status for r in again.files} == {"a.py": "converted", "b.py": "converted"}
    assert (src / "a.py").read_bytes() == converted()


def _small_tmpfs(path: Path) -> bool:
    if not shutil.which("mount") or os.geteuid() != 0:
        return False
    path.mkdir()
    return subprocess.run(["mount", "-t", "tmpfs", "-o", "size=96k", "tmpfs", str(path)],
                          capture_output=True).returncode == 0


@pytest.mark.subprocess
def test_really_full_disk_in_place(tmp_path):
    disk = tmp_path / "disk"
    if not _small_tmpfs(disk):
        pytest.skip("cannot mount a small tmpfs here (needs root and mount); the injected ENOSPC test covers it")
    try:
        src = make_project(disk / "p", {f"m{i}.py": CUDA for i in range(3)})
        fd = os.open(disk / "filler", os.O_WRONLY | os.O_CREAT)
        try:  # fill the disk to the last byte
            for size in (4096, 1):
                while True:
                    try:
                        os.write(fd, b"\0" * size)
                    except OSError:
                        break
        finally:
            os.close(fd)
        code, out, err = run_cli("convert", str(src), "--to", "cpu", "--in-place", "--report-dir",
                                 str(tmp_path / "r"))
        assert code == 1, out + err
        for i in range(3):
            assert (src / f"m{i}.py").read_bytes() == CUDA
        assert "error" in out and "m0.py" in out
        report = json.loads((tmp_path / "r" / "report.json").read_text())
        assert {f["status"] for f in report["files"]} == {"error"}
    finally:
        subprocess.run(["umount", str(disk)], capture_output=True)


# ------------------------------------------------------------------ data loss 4: two runs on one tree
def test_a_second_run_on_a_held_tree_is_refused(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    with writes.hold(src, "the input"):
        with pytest.raises(UsageError, match="another torchport run"):
            convert(src, "cpu", in_place=True, write_reports=False)
        with pytest.raises(UsageError, match="another torchport run"):
            port(src, "musa", in_place=True, write_reports=False)
    assert (src / "a.py").read_bytes() == CUDA


@pytest.mark.subprocess
def test_concurrent_in_place_runs_keep_every_original(tmp_path):
    originals = {f"m{i:03}.py": CUDA.replace(b"0.0001", f"0.{i:04}".encode()) for i in range(150)}
    src = make_project(tmp_path / "p", originals)
    runs = [start_cli("convert", str(src), "--to", "cpu", "--in-place", "--report-dir", str(tmp_path / f"r{k}"))
            for k in range(2)]
    codes = [r.wait(timeout=300) for r in runs]
    assert sorted(codes) in ([0, 0], [0, 2]), [r.stderr.read() for r in runs]
    backups = sorted(tmp_path.glob("p.torchport-backup*"))
    assert backups, "no backup was kept"
    for b in backups:
        for p in b.rglob("*.py"):
            assert p.read_bytes() == originals[p.name], f"{p} does not hold the original"
    assert {p.name: p.read_bytes() for p in src.glob("*.py")} == {k: converted(v) for k, v in originals.items()}


@pytest.mark.subprocess
def test_two_runs_into_one_output_cannot_both_find_it_free(tmp_path):
    src = make_project(tmp_path / "p", {f"m{i}.py": CUDA for i in range(40)})
    runs = [start_cli("convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o"), "--report-dir",
                      str(tmp_path / f"r{k}")) for k in range(2)]
    codes = sorted(r.wait(timeout=300) for r in runs)
    assert codes == [0, 2]
    with pytest.raises(UsageError, match="already exists"):
        files.hold_output(src, tmp_path / "o", "write", force=False)


# ------------------------------------------------------------------ data loss 5: port-ext renames onto a file
@pytest.mark.subprocess
def test_port_never_renames_onto_an_existing_file(tmp_path):
    mine = b"// my own MUSA version\n"
    src = make_project(tmp_path / "p", {"k.cu": KERNEL, "k.mu": mine})
    code, _out, err = run_cli("port-ext", str(src), "--to", "musa", "-o", str(tmp_path / "o"))
    assert code == 1, err
    assert (tmp_path / "o" / "k.mu").read_bytes() == mine, "the ported k.cu replaced the user's k.mu"
    assert (tmp_path / "o" / "k.cu").read_bytes() == KERNEL
    code, _out, err = run_cli("port-ext", str(src), "--to", "musa", "--in-place")
    assert code == 1, err
    assert (src / "k.mu").read_bytes() == mine and (src / "k.cu").read_bytes() == KERNEL
    report = json.loads(next(tmp_path.glob("p_musa_port_report")).joinpath("port_report.json").read_text())
    assert any(f["file"] == "k.cu" and f["action"] == "error" and "k.mu" in f["message"] for f in report["findings"])


# ------------------------------------------------------------------ data loss 6: a file edited mid-run
def test_a_file_edited_during_an_in_place_run_keeps_the_edit(tmp_path, monkeypatch):
    from torchport.converter import run

    src = make_project(tmp_path / "p", {"a.py": CUDA, "b.py": CUDA})
    edited = CUDA + b"# the user's edit\n"
    real = run.Converter.convert_file

    def convert_file(self, rel, data, kind, *rest):
        out = real(self, rel, data, kind, *rest)
        if rel == "a.py":
            (src / "a.py").write_bytes(edited)  # saved in an editor while torchport worked
        return out

    monkeypatch.setattr(run.Converter, "convert_file", convert_file)
    result = convert(src, "cpu", in_place=True, jobs=1, write_reports=False)
    assert (src / "a.py").read_bytes() == edited, "the edit was lost"
    assert (src / "b.py").read_bytes() == converted()
    status = {r.path: r for r in result.files}
    assert status["a.py"].status == "error" and "changed while" in status["a.py"].findings[-1].message
    backup = Path(result.backup)
    assert (backup / "b.py").read_bytes() == CUDA and not (backup / "a.py").exists()


def test_backups_hold_the_exact_bytes_converted_in_a_new_folder(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    stale = tmp_path / "p.torchport-backup"
    stale.mkdir()
    (stale / "a.py").write_bytes(b"an older backup\n")
    result = convert(src, "cpu", in_place=True, write_reports=False)
    assert Path(result.backup) != stale and (stale / "a.py").read_bytes() == b"an older backup\n"
    assert (Path(result.backup) / "a.py").read_bytes() == CUDA


# ------------------------------------------------------------------ silently wrong output
@pytest.mark.subprocess
@pytest.mark.parametrize("where", ["o", "o/reports"])
def test_report_folder_inside_the_output_is_refused(tmp_path, where):
    src = make_project(tmp_path / "p", {"a.py": CUDA, "report.md": b"# the project's own report\n"})
    code, _out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o"), "--report-dir",
                              str(tmp_path / where))
    assert code == 2 and "inside the output" in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "o").exists()


def test_in_place_does_not_write_through_hard_links(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    outside = tmp_path / "elsewhere.py"
    os.link(src / "a.py", outside)
    result = convert(src, "cpu", in_place=True, write_reports=False)
    assert outside.read_bytes() == CUDA, "the other name of the file was rewritten"
    assert (src / "a.py").read_bytes() == converted()
    assert any("hard link" in f.message for f in result.findings)


def test_read_only_file_in_place_is_left_and_listed(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA, "b.py": CUDA})
    (src / "a.py").chmod(0o444)
    result = convert(src, "cpu", in_place=True, write_reports=False)
    assert (src / "a.py").read_bytes() == CUDA and (src / "b.py").read_bytes() == converted()
    assert next(r for r in result.files if r.path == "a.py").status == "error"


def test_file_deleted_mid_run_is_its_error(tmp_path, monkeypatch):
    from torchport.converter import run

    src = make_project(tmp_path / "p", {"a.py": CUDA, "b.py": CUDA})
    real = run.Converter.convert_file

    def convert_file(self, rel, data, kind, *rest):
        if rel == "a.py":
            (src / "b.py").unlink()
        return real(self, rel, data, kind, *rest)

    monkeypatch.setattr(run.Converter, "convert_file", convert_file)
    result = convert(src, "cpu", tmp_path / "o", jobs=1, write_reports=False)
    status = {r.path: r.status for r in result.files}
    assert status == {"a.py": "converted", "b.py": "error"}
    assert "No such file" in next(r for r in result.files if r.path == "b.py").findings[0].message


@pytest.mark.subprocess
def test_unreadable_files_and_folders_are_errors_everywhere(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA, "locked.py": CUDA, "closed/c.py": CUDA})
    (src / "locked.py").chmod(0)
    (src / "closed").chmod(0)
    try:
        drop = unprivileged()
        code, out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o"), preexec_fn=drop)
        assert code == 1, err
        report = json.loads((tmp_path / "o_report" / "report.json").read_text())
        errors = {f["file"] for f in report["findings"] if f["action"] == "error"}
        assert errors == {"locked.py", "closed"}, errors
        assert (tmp_path / "o" / "a.py").read_bytes() == converted()
        code, out, err = run_cli("check", str(src), "--to", "cpu", preexec_fn=drop)
        assert code == 1 and "locked.py" in out and "closed" in out, out + err
        code, out, err = run_cli("analyze", str(src), "-o", str(tmp_path / "a"), preexec_fn=drop)
        analysis = json.loads((tmp_path / "a" / "analysis.json").read_text())
        assert {f["file"] for f in analysis["common"] if f["action"] == "error"} == {"locked.py", "closed"}
        code, out, err = run_cli("port-ext", str(src), "--to", "musa", "-o", str(tmp_path / "po"), preexec_fn=drop)
        assert code == 1, err
    finally:
        (src / "closed").chmod(0o755)
        (src / "locked.py").chmod(0o644)


@pytest.mark.subprocess
def test_read_only_output_parent_is_one_line(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    parent = tmp_path / "ro"
    parent.mkdir()
    parent.chmod(0o555)
    try:
        code, out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(parent / "o"),
                                 preexec_fn=unprivileged())
        assert code in (1, 2) and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
        assert str(parent / "o") in err or "ro" in err
    finally:
        parent.chmod(0o755)


# ------------------------------------------------------------------ hangs
@pytest.mark.subprocess
def test_special_files_are_skipped_not_opened(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    os.mkfifo(src / "pipe.py")
    os.mkfifo(src / "pipe.txt")
    for args in (["convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o")],
                 ["analyze", str(src), "-o", str(tmp_path / "a")],
                 ["check", str(src), "--to", "cpu"],
                 ["port-ext", str(src), "--to", "musa", "-o", str(tmp_path / "po")]):
        code, out, err = run_cli(*args, timeout=60)  # a FIFO opened for reading waits forever
        assert "Traceback" not in err, err
    report = json.loads((tmp_path / "o_report" / "report.json").read_text())
    skipped = {f["file"]: f["message"] for f in report["findings"] if "FIFO" in f["message"]}
    assert set(skipped) == {"pipe.py", "pipe.txt"}
    assert (tmp_path / "o" / "a.py").read_bytes() == converted() and not (tmp_path / "o" / "pipe.py").exists()


def test_a_fifo_swapped_in_after_the_walk_does_not_hang(tmp_path):
    path = tmp_path / "x.py"
    os.mkfifo(path)
    start = time.perf_counter()
    with pytest.raises(OSError):
        files.read_bytes(path)
    with pytest.raises(writes.Unreadable):
        writes.copy_file(path, tmp_path / "copy")
    assert time.perf_counter() - start < 5


# ------------------------------------------------------------------ names and paths
@pytest.mark.subprocess
def test_a_non_utf8_file_name_is_converted_and_reported(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    odd = os.fsencode(src) + b"/caf\xe9.py"
    with open(odd, "wb") as f:
        f.write(CUDA)
    code, out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o"))
    assert code == 0, err
    assert Path(os.fsdecode(os.fsencode(tmp_path / "o") + b"/caf\xe9.py")).read_bytes() == converted()
    report = json.loads((tmp_path / "o_report" / "report.json").read_text(encoding="utf-8"))
    assert len(report["files"]) == 2


def test_a_longest_file_name_is_written_atomically(tmp_path):
    name = "n" * 252 + ".py"  # 255 bytes: the temporary file beside it must still have a legal name
    src = make_project(tmp_path / "p", {name: CUDA})
    result = convert(src, "cpu", tmp_path / "o", write_reports=False)
    assert [r.status for r in result.files] == ["converted"]
    assert (tmp_path / "o" / name).read_bytes() == converted()
    backup = convert(src, "cpu", in_place=True, write_reports=False).backup
    assert (Path(backup) / name).read_bytes() == CUDA


@pytest.mark.subprocess
def test_deeply_nested_expressions_are_a_files_error(tmp_path):
    deep = b"import torch\nx = " + b"(" * 5000 + b"torch.zeros(1).cuda()" + b")" * 5000 + b"\n"
    src = make_project(tmp_path / "p", {"a.py": CUDA, "deep.py": deep})
    for args in (["analyze", str(src), "-o", str(tmp_path / "a")], ["check", str(src), "--to", "cpu"],
                 ["convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o")]):
        code, out, err = run_cli(*args)
        assert code == 1 and "Traceback" not in err, (args, out, err)


@pytest.mark.subprocess
@pytest.mark.parametrize("encoding", ["utf-16", "nul"])
def test_sources_with_nul_bytes_are_not_counted_as_ported(tmp_path, encoding):
    data = KERNEL.decode().encode("utf-16") if encoding == "utf-16" else KERNEL.replace(b"void", b"\0void")
    src = make_project(tmp_path / "p", {"k.cu": data, "ok.cu": KERNEL})
    code, out, err = run_cli("port-ext", str(src), "--to", "musa", "-o", str(tmp_path / "o"))
    assert code == 1, out + err
    report = json.loads((tmp_path / "o_port_report" / "port_report.json").read_text())
    assert [(f["file"], f["action"]) for f in report["findings"] if f["file"] == "k.cu"] == [("k.cu", "error")]
    assert (tmp_path / "o" / "k.cu").read_bytes() == data and (tmp_path / "o" / "ok.mu").exists()
    code, out, err = run_cli("analyze", str(src), "-o", str(tmp_path / "a"))
    analysis = json.loads((tmp_path / "a" / "analysis.json").read_text())
    assert [f["file"] for f in analysis["common"] if f["action"] == "error"] == ["k.cu"]


# ------------------------------------------------------------------ found by trying it as a hostile user would
@pytest.mark.subprocess
@pytest.mark.parametrize("args", [
    ["convert", "{p}", "--to", "npu", "--dry-run", "-r", "{bad}"],
    ["port-ext", "{p}", "--to", "musa", "--diff", "-m", "{bad}"],
    ["check", "{p}", "--to", "npu", "--baseline", "{bad}"],
    ["ops", "check", "{bad}", "--to", "npu"],
    ["convert", "{p}", "--to", "{bad}", "--dry-run"],
])
@pytest.mark.parametrize("bad", ["/dev/zero", "fifo"])
def test_data_files_that_never_end_are_refused(tmp_path, args, bad):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    if bad == "fifo":
        bad = str(tmp_path / "rules.toml")
        os.mkfifo(bad)
    code, out, err = run_cli(*[a.format(p=src, bad=bad) for a in args], timeout=60)
    said = "unknown target" if "{bad}" == args[args.index("--to") + 1] else "not a regular file"  # not a file
    assert code == 2 and said in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.subprocess
def test_explain_refuses_a_device_and_reads_a_pipe(tmp_path):
    code, _out, err = run_cli("explain", "-f", "/dev/zero", timeout=60)
    assert code == 2 and "not a regular file" in err
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    p = subprocess.run(f"printf 'RuntimeError: x\\n' | {sys.executable} -m torchport explain -f /dev/stdin", shell=True,
                       capture_output=True, text=True, env=env, timeout=60)
    assert p.returncode in (0, 1) and "Traceback" not in p.stderr, p.stderr


@pytest.mark.subprocess
def test_check_never_writes_over_what_it_checks_or_through_a_link(tmp_path):
    src = make_project(tmp_path / "p", {"train.py": CUDA, "util.py": CUDA})
    for args in (["-o", str(src / "util.py")], ["--write-baseline", str(src / "train.py")]):
        code, _out, err = run_cli("check", str(src), "--to", "npu", *args)
        assert code == 2 and "being checked" in err, err
    assert (src / "util.py").read_bytes() == CUDA and (src / "train.py").read_bytes() == CUDA
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"KEEP\n")
    (tmp_path / "link.txt").symlink_to(victim)
    code, _out, err = run_cli("check", str(src), "--to", "npu", "-o", str(tmp_path / "link.txt"))
    assert code == 1 and victim.read_bytes() == b"KEEP\n" and not (tmp_path / "link.txt").is_symlink()
    code, _out, err = run_cli("check", str(src), "--to", "npu", "-o", "/dev/null")
    assert code == 1 and os.path.exists("/dev/null") and not Path("/dev/null").is_file()


@pytest.mark.subprocess
def test_default_output_of_the_current_folder_is_beside_it(tmp_path):
    src = make_project(tmp_path / "proj", {"a.py": CUDA})
    env = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
    for args, made in ((["convert", ".", "--to", "npu"], "proj_npu"), (["analyze", ".", "-t", "npu"], "proj_analysis")):
        p = subprocess.run([sys.executable, "-m", "torchport", *args], cwd=src, capture_output=True, text=True, env=env)
        assert p.returncode == 0 and (tmp_path / made).is_dir(), p.stderr


@pytest.mark.subprocess
@pytest.mark.parametrize("source", ['["import torch\\n", 5]', '{"a": "import torch"}'])
def test_a_notebook_cell_whose_source_is_not_text_is_that_files_error(tmp_path, source):
    cell = '{"cells": [{"cell_type": "code", "source": ' + source + '}]}'
    src = make_project(tmp_path / "p", {"n.ipynb": cell.encode(), "a.py": CUDA})
    for args in (["check", str(src), "--to", "npu"], ["analyze", str(src), "-o", str(tmp_path / "an")],
                 ["convert", str(src), "--to", "npu", "--dry-run"]):
        code, out, err = run_cli(*args)
        assert code == 1 and "Traceback" not in err and "internal error" not in err, (args, out, err)


@pytest.mark.subprocess
def test_ambiguous_rule_files_are_refused(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    twice = tmp_path / "twice.toml"
    twice.write_text('[[rename]]\nold = "torch.cuda.synchronize"\nnew = "a.b"\n'
                     '[[rename]]\nold = "torch.cuda.synchronize"\nnew = "c.d"\n')
    dup = tmp_path / "dup.json"
    dup.write_text('{"rules": {"FuncNameModifyRule": []}, "rules": {}}')
    for rules, said in ((twice, "keep one"), (dup, "appears twice")):
        code, _out, err = run_cli("convert", str(src), "--to", "npu", "--dry-run", "-r", str(rules))
        assert code == 2 and said in err, err


@pytest.mark.subprocess
def test_a_grade_with_unread_files_says_unverified(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA, "b.py": b"import torch\n"})
    (src / "a.py").chmod(0)
    try:
        code, out, err = run_cli("analyze", str(src), "-t", "npu", "-o", str(tmp_path / "an"), preexec_fn=unprivileged())
    finally:
        (src / "a.py").chmod(0o644)
    assert code == 1 and "unverified: 1 file not read" in out, out + err
    data = json.loads((tmp_path / "an" / "analysis.json").read_text())
    assert data["per_target"]["npu"]["readiness"]["files_not_read"] == 1


@pytest.mark.subprocess
def test_upper_case_suffixes_are_python(tmp_path):
    src = make_project(tmp_path / "p", {"B.PY": CUDA})
    code, out, _err = run_cli("check", str(src), "--to", "npu")
    assert code == 1 and "B.PY:3" in out


@pytest.mark.subprocess
def test_explain_target_and_worker_count_are_checked():
    code, _out, err = run_cli("explain", "--to", "bogus", "some error")
    assert code == 2 and "unknown target" in err
    for n in ("0", "-5"):
        code, _out, err = run_cli("convert", str(ROOT / "examples"), "--to", "npu", "--dry-run", "-j", n)
        assert code == 2 and "at least 1 worker" in err, err


# ------------------------------------------------------------------ issue 31 item 13: the cosmetic rows
@pytest.mark.subprocess
def test_a_read_only_output_names_the_file_not_its_temporary_name(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    out = tmp_path / "o"
    assert run_cli("convert", str(src), "--to", "cpu", "-o", str(out))[0] == 0
    (src / "a.py").write_bytes(CUDA + b"y = 1\n")   # a file that must be written again (an unchanged one is left)
    out.chmod(0o555)
    try:
        code, _out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(out), "--force",
                                  preexec_fn=unprivileged())
        assert code in (1, 2) and "Traceback" not in err, err
        report = json.loads((tmp_path / "o_report" / "report.json").read_text()) if code == 1 else {}
        text = err + json.dumps(report)
        assert ".torchport-tmp-" not in text and "a.py" in text, text
    finally:
        out.chmod(0o755)


@pytest.mark.subprocess
def test_a_temporary_file_a_killed_run_left_is_removed_by_the_next_write(tmp_path):
    """A run killed between writing a temporary file and renaming it left `.torchport-tmp-<pid>-...`, which no
    later run removed.  One of a process that still runs (this one) is kept."""
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True).stdout.strip()
    stale = tmp_path / f".torchport-tmp-{dead}-0-a.py"
    live = tmp_path / f".torchport-tmp-{os.getpid()}-7-b.py"
    stale.write_text("half")
    live.write_text("mine")
    (tmp_path / ".torchport-tmp-x-0-c.py").write_text("not ours to judge")
    with writes.hold(tmp_path, "the output"):
        writes.write_file(tmp_path / "a.py", b"x = 1\n")
    assert not stale.exists() and live.exists() and (tmp_path / ".torchport-tmp-x-0-c.py").exists()
    assert (tmp_path / "a.py").read_bytes() == b"x = 1\n"


@pytest.mark.subprocess
def test_an_output_that_is_a_file_or_a_linked_report_folder_is_said_plainly(tmp_path):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    (tmp_path / "f.txt").write_text("mine\n")
    for command in ("convert", "migrate"):
        code, _out, err = run_cli(command, str(src), "--to", "cpu", "-o", str(tmp_path / "f.txt"), "--force")
        assert code == 2 and "is a file" in err and "use --force" not in err, err
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "report.md").write_text("mine\n")
    (tmp_path / "r").symlink_to(elsewhere)
    code, _out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o"), "--force",
                              "--report-dir", str(tmp_path / "r"))
    assert code == 2 and "is a link" in err, err
    assert (elsewhere / "report.md").read_text() == "mine\n" and sorted(os.listdir(elsewhere)) == ["report.md"]
    assert (tmp_path / "f.txt").read_text() == "mine\n"


def test_migrate_says_a_wrong_output_before_it_reads_the_project(tmp_path, monkeypatch):
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    from torchport.commands import analyze as analyze_api
    from torchport.commands.migrate import MigrateRequest, migrate

    monkeypatch.setattr(analyze_api, "analyze", lambda *a, **k: pytest.fail("the project was read first"))
    with pytest.raises(UsageError, match="inside the input"):
        migrate(MigrateRequest.of(src, "cpu", src / "out"))


@pytest.mark.subprocess
def test_a_planted_report_marker_hides_no_code_and_a_fifo_is_no_input(tmp_path):
    """A hostile re-trial: any folder holding a `.torchport-report` file was skipped as a report torchport wrote, so
    an empty marker beside model.py hid its `.cuda()` from `check` (exit 0: CUDA code past a CI gate), and convert
    left the folder out of its output; `convert a.py` of a FIFO said "converted copy" and wrote nothing, exit 0."""
    src = make_project(tmp_path / "p", {"src/model.py": CUDA, "src/.torchport-report": b"written by torchport\n"})
    code, out, err = run_cli("check", str(src), "--to", "npu")
    assert code == 1 and "model.py" in out, out + err
    code, _out, err = run_cli("convert", str(src), "--to", "cpu", "-o", str(tmp_path / "o"))
    assert code == 0 and (tmp_path / "o" / "src" / "model.py").read_bytes() == converted(), err
    os.mkfifo(tmp_path / "f.py")
    code, _out, err = run_cli("convert", str(tmp_path / "f.py"), "--to", "npu", "-o", str(tmp_path / "f_npu.py"),
                              timeout=30)
    assert code == 2 and "not a regular file" in err, err


@pytest.mark.subprocess
def test_reports_never_replace_what_the_command_names_or_write_through_links(tmp_path):
    """A hostile re-trial: `run --report u.py u.py` replaced the script; a link at the report name (or at sim's
    temporary name) was written through; a device node named as the report was replaced by a file; `check -o` wrote
    its report over the baseline it read."""
    script = tmp_path / "u.py"
    script.write_text("print('ran')\n")
    code, _out, err = run_cli("run", "--to", "cpu", "--report", str(script), str(script))
    assert code == 2 and "the report would replace it" in err and script.read_text() == "print('ran')\n", err
    victim = tmp_path / "victim.txt"
    victim.write_text("precious")
    (tmp_path / "rep.md").symlink_to(victim)
    code, _out, err = run_cli("run", "--to", "cpu", "--report", str(tmp_path / "rep.md"), str(script))
    assert code == 0, err
    assert victim.read_text() == "precious" and not (tmp_path / "rep.md").is_symlink()
    src = make_project(tmp_path / "p", {"a.py": CUDA})
    base = tmp_path / "base.json"
    run_cli("check", str(src), "--to", "npu", "--write-baseline", str(base))
    before = base.read_bytes()
    code, _out, err = run_cli("check", str(src), "--to", "npu", "--baseline", str(base), "-o", str(base))
    assert code == 2 and "baseline" in err and base.read_bytes() == before, err


def test_a_fifo_or_a_link_to_a_device_in_the_output_is_replaced_never_written_into(tmp_path):
    """A hostile re-trial: a FIFO at an output file hung `convert --force` for ever; a link to /dev/null there
    swallowed the converted file (writes followed it as if the user had named a device)."""
    out = tmp_path / "o"
    out.mkdir()
    os.mkfifo(out / "a.py")
    (out / "b.py").symlink_to("/dev/null")
    with writes.hold(out, "the output"):
        writes.write_file(out / "a.py", b"x = 1\n")
        writes.write_file(out / "b.py", b"y = 2\n")
    assert (out / "a.py").read_bytes() == b"x = 1\n" and (out / "b.py").read_bytes() == b"y = 2\n"
    assert not (out / "b.py").is_symlink()
