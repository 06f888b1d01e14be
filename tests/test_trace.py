"""A failed run read back (issue 30 class 8): the migrated lines its traceback went through, the origins of the
names they read, and the convert edit that made the failing value; What's left names them, and a failure no item
names is "silent" (bench/corpus_sim.py counts those)."""
import contextlib
import io
import json
from pathlib import Path

import pytest

from torchport.cli import main
from torchport.commands.migrate import trace

LOG = '''\
Traceback (most recent call last):
  File "{root}/train.py", line 6, in <module>
    print(describe(BACKEND), x)
  File "{root}/util.py", line 5, in describe
    return KNOWN[name]
  File "/usr/lib/python3.11/somewhere.py", line 1, in elsewhere
KeyError: 'npu'
'''


def tree(tmp_path: Path) -> Path:
    root = tmp_path / "out"
    (root / "pkg").mkdir(parents=True)
    (root / "config.py").write_text('import torch\nimport torch_npu  # noqa: F401\n\nBACKEND = "npu"\n')
    (root / "util.py").write_text('KNOWN = {"cuda": "gpu kernels", "cpu": "host"}\n\n\ndef describe(name):\n'
                                  '    return KNOWN[name]\n')
    (root / "train.py").write_text('import torch\nfrom config import BACKEND\nfrom util import describe\n\n'
                                   'x = torch.ones(2, device=BACKEND)\nprint(describe(BACKEND), x)\n')
    return root


def test_frames_in_the_tree_innermost_first(tmp_path):
    root = tree(tmp_path)
    log = "noise\n" + LOG.format(root=root).replace("KeyError", "ValueError") + "\n" + LOG.format(root=root)
    assert trace.frames(log, root) == [("util.py", 5), ("train.py", 6)], "the last traceback, frames outside dropped"
    assert trace.exception_line(LOG.format(root=root)) == "KeyError: 'npu'"
    assert trace.frames(LOG.format(root=tmp_path / "elsewhere"), root) == []


def test_names_are_followed_to_their_assignments_and_across_imports(tmp_path):
    root = tree(tmp_path)
    through = trace.lines_through(LOG.format(root=root), root)
    assert [(ln.where, ln.how, ln.name) for ln in through] == [
        ("util.py:5", "frame", ""), ("util.py:1", "origin", "KNOWN"),
        ("train.py:6", "frame", ""), ("config.py:4", "origin", "BACKEND"), ("train.py:5", "origin", "x")]
    assert through[1].frame == "util.py:5" and through[3].frame == "train.py:6"


def test_names_in_strings_and_comments_are_not_read():
    assert trace.read_names('x = f("BACKEND", y)  # KNOWN') == ["x", "f", "y"]


def test_relative_and_sibling_imports_find_their_files(tmp_path):
    root = tree(tmp_path)
    (root / "pkg" / "__init__.py").write_text("")
    (root / "pkg" / "a.py").write_text("from .b import NAME\nprint(NAME)\n")
    (root / "pkg" / "b.py").write_text("NAME = 'npu'\n")
    t = trace.Tree(root)
    assert t.module_file("pkg/a.py", ".b") == "pkg/b.py" and t.module_file("train.py", "config") == "config.py"
    assert trace.bindings(t, "pkg/a.py", "NAME") == [("pkg/b.py", 1)]


def cli(*args) -> tuple:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main([str(a) for a in args])
    return code, out.getvalue(), err.getvalue()


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.sim
def test_a_failed_verify_names_the_edit_that_made_the_failing_value(tmp_path):
    """config.py's "cuda" is a device there (convert writes "npu"); util.py's dict key is a name, kept: the run
    stops in util.py with KeyError 'npu', and What's left names config.py's edit, three frames away."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "config.py").write_text('import torch\n\nBACKEND = "cuda"\nwarm = torch.zeros(1, device=BACKEND)\n')
    (proj / "util.py").write_text('KNOWN = {"cuda": "gpu kernels", "cpu": "host"}\n\n\ndef describe(name):\n'
                                  '    return KNOWN[name]\n')
    (proj / "train.py").write_text('import torch\nfrom config import BACKEND\nfrom util import describe\n\n'
                                   'x = torch.ones(2, device=BACKEND)\nprint(describe(BACKEND), x)\n')
    out = tmp_path / "p_npu"
    code, stdout, _ = cli("migrate", proj, "--to", "npu", "-o", out, "-q", "--verify", "--", "python", "train.py")
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    traced = [r for r in data["whats_left"] if r["kind"] == "verify-traced"]
    assert code == 1 and data["verified"]["verdict"] == "failed"
    edit = next(r for r in traced if r["file"] == "config.py")
    assert edit["line"] == 4 and edit["item"] == '"cuda" -> "npu"' and edit["risk"] == "fail", traced
    assert "KeyError: 'npu'" in edit["why"] and "it gives BACKEND, read at train.py:" in edit["why"]
    assert "torchport: ignore" in edit["fix"]
    # the dict key that TP206 reported is on the path too: that row is now proven to matter
    assert any(r["file"] == "util.py" and r["line"] == 1 and "KNOWN" in r["why"] for r in traced), traced


def test_a_documented_known_error_is_the_cause_a_shapes_reading_is_not(tmp_path):
    from torchport.commands.migrate import _cause_known
    from torchport.doctor.explain import explain

    failed = ('Traceback (most recent call last):\n  File "/out/train.py", line 6, in <module>\n'
              '    print(getattr(dist, "is_" + BACKEND + "_available")())\n'
              "AttributeError: module 'torch.distributed' has no attribute 'is_hccl_available'\n")
    assert _cause_known(failed, explain(failed, target="npu")[0]).id == "npu-is-hccl-available-missing"
    keyerror = LOG.format(root=tree(tmp_path))
    assert _cause_known(keyerror, explain(keyerror, target="npu")[0]) is None
    other = failed.replace("is_hccl_available", "no_such_name")   # read from its shape only: not a known cause
    assert _cause_known(other, explain(other, target="npu")[0]) is None


@pytest.mark.subprocess
@pytest.mark.torch
@pytest.mark.sim
def test_an_edit_on_the_path_of_a_known_error_is_not_advised_undone(tmp_path):
    """A new user's trial (pytorch-ignite 0.5.5 to npu): the verify failed on dist.is_hccl_available, which the
    simulated torch_npu lacked, through ignite's `NCCL = dist.Backend.NCCL` that convert had rightly made "hccl";
    What's left advised keeping CUDA's value with `# torchport: ignore`.  The known error explains the failure now,
    and the edit's row points there instead."""
    proj = tmp_path / "p"
    proj.mkdir()
    (proj / "config.py").write_text("import torch.distributed as dist\n\nBACKEND = dist.Backend.NCCL\n")
    (proj / "train.py").write_text("import torch\nimport torch.distributed as dist\nfrom config import BACKEND\n\n"
                                   "del dist.is_hccl_available   # a stack without it, as the simulator was\n"
                                   'print(getattr(dist, "is_" + BACKEND + "_available")())\n')
    out = tmp_path / "p_npu"
    code, stdout, _ = cli("migrate", proj, "--to", "npu", "-o", out, "-q", "--verify", "--", "python", "train.py")
    data = json.loads((out / "torchport-report" / "migrate.json").read_text())
    assert code == 1 and data["verified"]["verdict"] == "failed"
    known = [r for r in data["whats_left"] if r["kind"] == "known-error"]
    assert [r["rule"] for r in known] == ["npu-is-hccl-available-missing"], known
    edit = next(r for r in data["whats_left"] if r["kind"] == "verify-traced" and r["file"] == "config.py")
    assert edit["item"] == 'dist.Backend.NCCL -> "hccl"', edit
    assert "torchport: ignore" not in edit["fix"] and "npu-is-hccl-available-missing" in edit["fix"], edit
