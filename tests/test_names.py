"""Hostile names and line endings: a file name cannot forge output lines, diff headers or terminal
sequences (core/names.py); old-Mac CR and mixed line endings survive a conversion (core/textfile.py)."""
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

import torchport
from torchport.cli import main
from torchport.core.names import printable
from torchport.core.textfile import Text, unified_diff

ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))
CUDA = b"import torch\nx = torch.ones(2).cuda()\n"
BROKEN = b"import torch\nx = torch.ones(2).cuda()\ndef f(:\n"


# ------------------------------------------------------------------ printable()
@pytest.mark.parametrize("name,shown", [
    ("a\n+++ b/evil.py", r"a\n+++ b/evil.py"),
    ("cr\rx.py", r"cr\rx.py"),
    ("esc\x1b[2Jx.py", r"esc\x1b[2Jx.py"),
    ("tab\tx.py", r"tab\tx.py"),
    ("bell\x07\x7f.py", r"bell\x07\x7f.py"),
    ("rtl\u202egnp.py", r"rtl\u202egnp.py"),
    ("line\u2028sep.py", r"line\u2028sep.py"),
    ("bad\udcff.py", r"bad\udcff.py"),  # os.listdir's name for a file whose name is not UTF-8
    (b"bytes\xff\n.py", r"bytes\udcff\n.py"),
])
def test_control_characters_are_escaped(name, shown):
    assert printable(name) == shown
    assert printable(name).isprintable()


@pytest.mark.parametrize("name", ["train.py", "my file.py", "中文.py", "données/été.py", "a'b\"c.py", "dir\\x.py",
                                  "-rf", ""])
def test_ordinary_names_are_unchanged(name):
    assert printable(name) == name


def test_paths_and_other_values():
    from pathlib import Path

    assert printable(Path("out") / "a\nb") == r"out/a\nb"
    assert printable(3) == "3"


# ------------------------------------------------------------------ diff headers
def headers(diff: str) -> list:
    return [line for line in diff.splitlines() if line.startswith(("--- ", "+++ "))]


def test_a_newline_in_a_name_cannot_forge_diff_headers():
    diff = unified_diff("a\n", "b\n", "a/x\n+++ b/evil.py", "b/x\n+++ b/evil.py")
    assert headers(diff) == [r"--- a/x\n+++ b/evil.py", r"+++ b/x\n+++ b/evil.py"]
    assert diff.splitlines()[2:] == ["@@ -1 +1 @@", "-a", "+b"]


def test_ordinary_names_in_diff_headers_are_unchanged():
    diff = unified_diff("a\n", "b\n", "a/中文 x.py", "b/中文 x.py")
    assert headers(diff) == ["--- a/中文 x.py", "+++ b/中文 x.py"]


@pytest.fixture
def hostile_tree(tmp_path):
    """A project whose file names carry newlines, a terminal escape, a CR and a byte that is not UTF-8."""
    root = os.fsencode(tmp_path / "proj")
    names = [b"a\n+++ b/evil.py", b"esc\x1b[31mred.py", b"cr\rx.py", b"bad\xff.py", "中文 x.py".encode(), b"plain.py"]
    for name in names:
        path = os.path.join(root, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as f:
            f.write(CUDA)
    return tmp_path / "proj", len(names)


def cli(*args):
    p = subprocess.run([sys.executable, "-m", "torchport", *args], capture_output=True, env=ENV, timeout=120)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode("utf-8")


@pytest.mark.subprocess
def test_convert_diff_has_two_header_lines_per_file(hostile_tree):
    proj, n = hostile_tree
    code, out, err = cli("convert", str(proj), "--to", "npu", "--diff")
    assert code == 0, err
    found = headers(out)
    assert len(found) == 2 * n, found
    assert r"--- a/a\n+++ b/evil.py" in found and r"+++ b/a\n+++ b/evil.py" in found
    assert "--- a/中文 x.py" in found and r"--- a/bad\udcff.py" in found and r"--- a/cr\rx.py" in found
    assert "\x1b" not in out and "\r" not in out
    assert len(re.findall(r"^@@ ", out, re.M)) == n


@pytest.mark.subprocess
def test_error_lines_and_summaries_escape_names(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "esc\x1b[2J.py").write_bytes(BROKEN)
    (proj / "nl\nfake.py").write_bytes(BROKEN)
    code, out, err = cli("convert", str(proj), "--to", "npu", "--dry-run")
    assert code == 1, err
    assert "\x1b" not in out
    errors = [line for line in out.splitlines() if line.startswith("  error:")]
    assert sorted(errors) == [r"  error: esc\x1b[2J.py:3: syntax error: invalid syntax; copied unchanged",
                              r"  error: nl\nfake.py:3: syntax error: invalid syntax; copied unchanged"]
    assert not any(line.startswith("fake.py") for line in out.splitlines())
    out_dir = tmp_path / "out\x1b[0m\nx"
    code, out, err = cli("convert", str(proj), "--to", "npu", "-o", str(out_dir))
    assert code == 1 and r"converted copy: " + str(tmp_path) + r"/out\x1b[0m\nx" in out
    assert "\x1b" not in out


def test_usage_errors_escape_names(tmp_path, capsys):
    assert main(["convert", str(tmp_path / "no\x1b]0;pwned\x07pe"), "--to", "npu"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "\x1b" not in err and "\x07" not in err
    assert err.endswith(r"no\x1b]0;pwned\x07pe" + "\n")


@pytest.mark.subprocess
def test_json_keeps_exact_names_as_json_escapes(hostile_tree):
    import json

    proj, n = hostile_tree
    code, out, err = cli("convert", str(proj), "--to", "npu", "--dry-run", "--json")
    assert code == 0, err
    paths = {f["path"] for f in json.loads(out)["files"]}
    assert {"a\n+++ b/evil.py", "esc\x1b[31mred.py", "cr\rx.py", "bad\udcff.py", "中文 x.py"} <= paths


@pytest.mark.subprocess
def test_check_escapes_names(hostile_tree):
    proj, n = hostile_tree
    code, out, err = cli("check", str(proj), "--to", "npu")
    assert code == 1, err
    assert "\x1b" not in out and "\r" not in out
    lines = out.splitlines()
    assert all(re.match(r".+:\d+:\d+: TP\d+ ", line) for line in lines[:-1]), lines


# ------------------------------------------------------------------ line endings
@pytest.mark.parametrize("text,newline", [("a = 1\rb = 2\r", "\r"), ("a\r\nb\n", "\r\n"), ("a\nb\r\n", "\n"),
                                          ("a\rb\r\n", "\r"), ("one line", "\n"), ("", "\n")])
def test_newline_is_the_first_line_ending(text, newline):
    assert Text(text, "utf-8").newline == newline


def test_a_cr_only_file_gets_cr_on_inserted_lines(tmp_path):
    src = tmp_path / "old_mac.py"
    src.write_bytes(b"import torch\rx = torch.randn(2).cuda()\r")
    assert main(["convert", str(src), "--to", "npu", "-o", str(tmp_path / "out.py")]) == 0
    data = (tmp_path / "out.py").read_bytes()
    assert data == b"import torch\rimport torch_npu  # noqa: F401\rx = torch.randn(2).npu()\r"
    assert b"\n" not in data
    compile(data, "out.py", "exec")


def test_mixed_line_endings_keep_the_lines_not_touched(tmp_path):
    original = "import torch\r\n# lf\n# cr\rx = torch.randn(2).cuda()\r\nz = 2\r"
    src = tmp_path / "mixed.py"
    src.write_bytes(original.encode())
    assert main(["convert", str(src), "--to", "npu", "-o", str(tmp_path / "out.py")]) == 0
    out = (tmp_path / "out.py").read_bytes().decode()
    assert out == ("import torch\r\nimport torch_npu  # noqa: F401\r\n# lf\n# cr\rx = torch.randn(2).npu()\r\n"
                   "z = 2\r")
    compile(out, "out.py", "exec")
    result = torchport.convert(src, "npu", diff=True)
    assert result.files[0].new_text == out
