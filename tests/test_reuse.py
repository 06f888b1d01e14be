"""converter/reuse.py: a re-run takes the results of unchanged files from the last run, and its output is the
output of converting everything again."""
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import tree_digest

from torchport.api import convert
from torchport.converter import reuse, run

ROOT = Path(__file__).resolve().parents[1]

PROJECT = {
    "config.py": 'BACKEND = "cuda"\nLR = 0.1\n',
    "train.py": ("import torch\nfrom config import BACKEND\nfrom engine import Engine\n\n"
                 "x = torch.ones(2, device=BACKEND)\nengine = Engine(\"cuda\")\n"
                 "if torch.cuda.is_available():\n    torch.cuda.synchronize()\n"),
    "engine.py": ("import torch\n\n\nclass Engine:\n    def __init__(self, device):\n"
                  "        self.net = torch.nn.Linear(2, 2).to(device)\n"),
    "util.py": "import torch\n\n\ndef free():\n    torch.cuda.empty_cache()\n",
    "plain.py": "print('no cuda here')\n",
    "run.sh": "CUDA_VISIBLE_DEVICES=0 python train.py\n",
    "README.md": "Runs on cuda.\n",
}


@pytest.fixture
def cache_on(tmp_path, monkeypatch):
    monkeypatch.setenv("TORCHPORT_CACHE", str(tmp_path / "cache"))
    monkeypatch.delenv("TORCHPORT_NO_CACHE", raising=False)
    monkeypatch.delenv("TORCHPORT_NO_RESULT_CACHE", raising=False)


def make(folder: Path, files=PROJECT) -> Path:
    for rel, text in files.items():
        (folder / rel).parent.mkdir(parents=True, exist_ok=True)
        (folder / rel).write_text(text)
    return folder


def report(out: Path) -> dict:
    """report.json without what differs between any two runs (when, how long)."""
    data = json.loads((out.parent / f"{out.name}_report" / "report.json").read_text())
    data.pop("started")
    data["summary"].pop("elapsed_seconds")
    return data


def same(a: dict, b: dict) -> bool:
    """Two reports alike but for where they were written."""
    def where_not(d):
        return {k: v for k, v in d.items() if k not in ("output", "report_dir")}
    return where_not(a) == where_not(b)


def converted(src: Path, out: Path, target="npu", **options):
    result = convert(src, target, out, jobs=1, **options)
    return result, tree_digest(out), report(out)


def test_an_unchanged_rerun_takes_every_result_from_the_last_run_and_writes_the_same(tmp_path, cache_on):
    src = make(tmp_path / "proj")
    first, tree1, report1 = converted(src, tmp_path / "a")
    assert first.reused == 0
    again, tree2, report2 = converted(src, tmp_path / "b")
    convertible = [r for r in again.files if r.kind in ("python", "shell")]
    assert again.reused == len(convertible) == 6
    assert tree2 == tree1 and same(report2, report1)
    assert any(r.status == "converted" for r in again.files) and again.findings == first.findings


def test_after_one_file_is_edited_only_that_file_is_converted_and_the_output_is_a_full_runs(tmp_path, cache_on):
    src = make(tmp_path / "proj")
    converted(src, tmp_path / "a")
    (src / "util.py").write_text("import torch\n\n\ndef free():\n    torch.cuda.synchronize()\n")
    calls = []
    real = run.Converter.convert_file

    def counting(self, rel, *args, **kwargs):
        calls.append(rel)
        return real(self, rel, *args, **kwargs)

    run.Converter.convert_file = counting
    try:
        again, tree2, report2 = converted(src, tmp_path / "b")
    finally:
        run.Converter.convert_file = real
    assert calls == ["util.py"] and again.reused == 5
    full, tree3, report3 = converted(src, tmp_path / "c", cache=False)
    assert full.reused == 0 and tree2 == tree3
    assert same(report2, report3)


def test_a_file_whose_project_facts_changed_is_converted_again(tmp_path, cache_on):
    """config.py's BACKEND is a device only because train.py uses it as one: when train.py stops, config.py's
    result changes too, though its bytes did not."""
    src = make(tmp_path / "proj")
    _r, tree1, _ = converted(src, tmp_path / "a")
    (src / "train.py").write_text("import torch\nfrom config import LR\nprint(LR)\n")
    again, tree2, _ = converted(src, tmp_path / "b")
    full, tree3, _ = converted(src, tmp_path / "c", cache=False)
    assert tree2 == tree3
    assert tree1["config.py"] != tree3["config.py"]   # the fact mattered, and the re-run saw it change
    assert again.reused == 4                           # engine, util, plain, run.sh


def test_another_target_option_or_rule_file_converts_everything_again(tmp_path, cache_on):
    src = make(tmp_path / "proj")
    converted(src, tmp_path / "a")
    assert converted(src, tmp_path / "b", target="mlu")[0].reused == 0
    assert converted(src, tmp_path / "c", similar=True)[0].reused == 0
    rules = tmp_path / "rules.toml"
    rules.write_text('[[keep]]\nname = "pynvml"\nmessage = "ours"\n')
    with_rules, tree_r, _ = converted(src, tmp_path / "d", rules=[str(rules)])
    assert with_rules.reused == 0
    rules.write_text(rules.read_text().replace("ours", "still ours"))   # the rule file's bytes are in the key
    edited, _t, rep = converted(src, tmp_path / "e", rules=[str(rules)])
    assert edited.reused == 0
    assert converted(src, tmp_path / "f", rules=[str(rules)])[0].reused == 6


def test_a_pack_others_may_write_or_a_damaged_one_is_not_used(tmp_path, cache_on):
    src = make(tmp_path / "proj")
    _r, tree1, _ = converted(src, tmp_path / "a")
    packs = list((tmp_path / "cache").glob("convert-*/*.marshal"))
    assert len(packs) == 1
    pack = packs[0]
    pack.chmod(0o666)            # anyone could have put converted bytes there
    assert converted(src, tmp_path / "b")[0].reused == 0
    pack.chmod(0o600)
    assert converted(src, tmp_path / "c")[0].reused == 6
    pack.write_bytes(pack.read_bytes()[:100])
    damaged, tree_d, _ = converted(src, tmp_path / "d")
    assert damaged.reused == 0 and tree_d == tree1


def test_no_cache_switches(tmp_path, cache_on, monkeypatch):
    src = make(tmp_path / "proj")
    converted(src, tmp_path / "a")
    assert converted(src, tmp_path / "b", cache=False)[0].reused == 0
    monkeypatch.setenv("TORCHPORT_NO_RESULT_CACHE", "1")
    assert converted(src, tmp_path / "c")[0].reused == 0
    monkeypatch.delenv("TORCHPORT_NO_RESULT_CACHE")
    monkeypatch.setenv("TORCHPORT_NO_CACHE", "1")
    assert converted(src, tmp_path / "d")[0].reused == 0
    assert not reuse.enabled() and reuse.enabled.__module__ == "torchport.converter.reuse"


def test_an_entry_that_is_not_a_result_is_a_miss():
    assert reuse.result(("not", "a", "result")) is None
    assert reuse.result((None, (), "lines", None, ())) is None
    assert reuse.result((b"x", (("f", 1, 1, "TP1", "c", "modify", "", "", "", 0, ()),), 3, ((1, 1, 1, 1),), ())) \
        is not None


@pytest.mark.subprocess
def test_the_command_line_says_what_it_took_from_the_last_run(tmp_path):
    src = make(tmp_path / "proj")
    env = dict(os.environ, TORCHPORT_CACHE=str(tmp_path / "cache"), PYTHONPATH=str(ROOT / "src"))
    env.pop("TORCHPORT_NO_RESULT_CACHE", None)
    env.pop("TORCHPORT_NO_CACHE", None)

    def cli(*extra):
        out = tmp_path / "out"
        shutil.rmtree(out, ignore_errors=True)
        shutil.rmtree(tmp_path / "out_report", ignore_errors=True)
        p = subprocess.run([sys.executable, "-m", "torchport", "convert", str(src), "--to", "cpu", "-o", str(out),
                            *extra], capture_output=True, text=True, env=env)
        assert p.returncode == 0, p.stderr
        return p.stdout.splitlines()[0]

    assert "last run" not in cli()
    assert "(6 files as in the last run, not converted again; --no-cache converts all)" in cli()
    assert "last run" not in cli("--no-cache")


def test_packs_no_run_wrote_for_a_month_are_removed(tmp_path, cache_on):
    src = make(tmp_path / "proj")
    converted(src, tmp_path / "a")
    folder = next((tmp_path / "cache").glob("convert-*"))
    old, recent = folder / ("0" * 32 + ".marshal"), folder / ("1" * 32 + ".marshal")
    for p in (old, recent):
        p.write_bytes(b"x")
    month = 31 * 86400
    os.utime(old, (old.stat().st_atime - month, old.stat().st_mtime - month))
    converted(src, tmp_path / "b")
    assert not old.exists() and recent.exists() and len(list(folder.glob("*.marshal"))) == 2


def test_a_rerun_into_its_own_output_leaves_files_that_would_not_change_and_never_writes_through_links(tmp_path,
                                                                                                     cache_on):
    src = make(tmp_path / "proj")
    out = tmp_path / "out"
    convert(src, "npu", out, jobs=1)
    before = {p.name: os.lstat(p) for p in out.iterdir() if p.is_file()}
    victim = tmp_path / "victim.py"
    victim.write_bytes((out / "util.py").read_bytes())
    (out / "util.py").unlink()
    os.link(victim, out / "util.py")                 # a second name of a file of the user's: replaced, not written
    (out / "plain.py").unlink()
    (out / "plain.py").symlink_to(victim)            # a link: replaced
    (out / "engine.py").chmod(0o600)                 # another mode: written again
    convert(src, "npu", out, jobs=1, force=True)
    after = {p.name: os.lstat(p) for p in out.iterdir() if p.is_file() or p.is_symlink()}
    for name in ("train.py", "config.py"):            # same bytes and mode: the same file, untouched
        assert (after[name].st_ino, after[name].st_mtime_ns) == (before[name].st_ino, before[name].st_mtime_ns)
    assert after["util.py"].st_ino != victim.stat().st_ino and victim.stat().st_nlink == 1
    assert not (out / "plain.py").is_symlink() and (out / "plain.py").read_text() == PROJECT["plain.py"]
    assert after["engine.py"].st_ino != before["engine.py"].st_ino
    assert (after["engine.py"].st_mode & 0o777) == (src / "engine.py").stat().st_mode & 0o777
    assert tree_digest(out) == converted(src, tmp_path / "fresh")[1]


def test_a_rerun_into_its_own_output_leaves_copied_files_that_are_already_there(tmp_path, cache_on):
    """Files convert copies as they are (README, data) are compared, not copied again, when the output already
    holds them: same bytes (past the first MiB too) and mode.  A changed byte, mode or a second name is copied."""
    src = make(tmp_path / "proj")
    data = bytes(range(256)) * (3 * 4096 + 7)                 # over 3 MiB: compared block by block
    (src / "weights.bin").write_bytes(data)
    (src / "notes.txt").write_text("notes\n")
    (src / "table.csv").write_text("a,b\n1,2\n")
    out = tmp_path / "out"
    convert(src, "npu", out, jobs=1)
    before = {p.name: os.lstat(p) for p in out.iterdir() if p.is_file()}
    victim = tmp_path / "victim.txt"
    victim.write_bytes((out / "notes.txt").read_bytes())
    (out / "notes.txt").unlink()
    os.link(victim, out / "notes.txt")                 # a second name of a file of the user's: replaced
    (src / "weights.bin").write_bytes(data[:-1] + b"\x00")  # the last byte (255), past the first block
    (src / "table.csv").chmod(0o600)
    convert(src, "npu", out, jobs=1, force=True)
    after = {p.name: os.lstat(p) for p in out.iterdir() if p.is_file()}
    assert (after["README.md"].st_ino, after["README.md"].st_mtime_ns) == \
        (before["README.md"].st_ino, before["README.md"].st_mtime_ns)
    assert after["weights.bin"].st_ino != before["weights.bin"].st_ino
    assert (out / "weights.bin").read_bytes() == (src / "weights.bin").read_bytes()
    assert after["notes.txt"].st_ino != victim.stat().st_ino and victim.stat().st_nlink == 1
    assert after["table.csv"].st_ino != before["table.csv"].st_ino and after["table.csv"].st_mode & 0o777 == 0o600
    assert tree_digest(out) == converted(src, tmp_path / "fresh")[1]


def test_a_force_rerun_long_after_the_first_keeps_every_file_it_left_as_it_was(tmp_path, cache_on):
    """Files a --force re-run leaves untouched (same bytes) are its output, however old their times: never taken
    for stale files of the earlier run and removed (they were, when the re-run came over 2 s later)."""
    src = make(tmp_path / "proj")
    out = tmp_path / "out"
    convert(src, "npu", out, jobs=1)
    first = tree_digest(out)
    hour = 3600 * 10**9
    for p in out.rglob("*"):            # as if the first run had been an hour ago
        info = p.lstat()
        os.utime(p, ns=(info.st_atime_ns - hour, info.st_mtime_ns - hour), follow_symlinks=False)
    record = json.loads((tmp_path / "out_report" / "output_files.json").read_text())
    record["files"] = {rel: [size, mtime - hour] for rel, (size, mtime) in record["files"].items()}
    (tmp_path / "out_report" / "output_files.json").write_text(json.dumps(record))
    for _ in range(2):
        again = convert(src, "npu", out, jobs=1, force=True)
        assert again.settled.removed == [] and tree_digest(out) == first
    (src / "util.py").unlink()           # a file the project no longer has: its old output is stale, and goes
    convert(src, "npu", out, jobs=1, force=True)
    assert not (out / "util.py").exists() and (out / "train.py").exists()
