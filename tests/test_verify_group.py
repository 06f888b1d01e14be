"""`migrate --verify` returns when its command exits, not when every process the command left in the background
has closed its output, and ends what it left running (issue 31 item 6)."""
import contextlib
import io
import os
import subprocess
import time

import pytest

from torchport.cli import main


@pytest.mark.subprocess
def test_a_background_child_neither_holds_verify_nor_outlives_it(tmp_path):
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\nx = torch.ones(1).cuda()\n")
    marker = f"sleep 45.{os.getpid()}{time.monotonic_ns() % 100000}"   # a duration no other process has
    start = time.monotonic()
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["migrate", str(proj), "--to", "cpu", "-o", str(tmp_path / "out"), "-q", "--verify", "--",
                     "sh", "-c", f"{marker} & echo done"])
    took = time.monotonic() - start
    assert took < 20, f"verify waited {took:.0f} s for a background child"
    assert code in (0, 1) and "exit 0" in out.getvalue(), out.getvalue() + err.getvalue()
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == "", "the background child was left running"


@pytest.mark.subprocess
def test_output_without_newlines_is_kept_bounded_and_its_end_kept(tmp_path):
    """A verify command that printed hundreds of MB on one line was read as one line into memory and written
    whole into verify.log.  Its start and its end (where a traceback is) are kept; what lies between is counted."""
    from torchport.backends import load_target
    from torchport.commands.migrate import KEPT_HEAD, KEPT_TAIL, run_verify

    script = ("import sys\nfor _ in range(40):\n    sys.stdout.write('x' * 1_000_000)\n"
              "sys.stdout.write('\\nTraceback: the end\\n')\n")
    echoed = []
    done = run_verify(load_target("cpu"), ["python", "-c", script], tmp_path, echoed.append)
    assert done.exit_code == 0
    assert len(done.output) < KEPT_HEAD + KEPT_TAIL + 200
    assert done.output.endswith("Traceback: the end\n") and "characters of output left out" in done.output
    assert max(len(line) for line in echoed) <= 4096 and echoed[-1] == "Traceback: the end"


@pytest.mark.subprocess
def test_a_grandchild_in_a_session_of_its_own_is_ended_too(tmp_path):
    """A hostile re-trial: a verify command whose child started its own session (`setsid`, a daemon) left it
    running after migrate returned; the process group did not hold it."""
    proj = tmp_path / "proj"
    proj.mkdir()
    (proj / "train.py").write_text("import torch\n")
    marker = f"sleep 46.{os.getpid()}{time.monotonic_ns() % 100000}"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(["migrate", str(proj), "--to", "cpu", "-o", str(tmp_path / "out"), "-q", "--verify", "--",
              "sh", "-c", f"setsid {marker} & echo done"])
    time.sleep(0.3)
    left = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True)
    assert left.stdout.strip() == "", "the daemonised grandchild was left running"


@pytest.mark.subprocess
def test_a_python_wrapper_that_leaves_a_process_behind_does_not_hold_migrate(tmp_path):
    """A hostile re-trial: `--python ./wrapper`, a script that starts `sleep 90 &` then execs Python, made migrate
    wait for the background process (its pipe stayed open), past the 60 s limit; a relative path was not found."""
    import sys

    from torchport.analyze.libraries import search_path

    marker = f"sleep 45.{os.getpid()}{time.monotonic_ns() % 100000}"
    wrapper = tmp_path / "wrapper"
    wrapper.write_text(f"#!/bin/sh\n{marker} &\nexec {sys.executable} \"$@\"\n")
    wrapper.chmod(0o755)
    start = time.monotonic()
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        _name, entries = search_path("./wrapper")
    finally:
        os.chdir(cwd)
    assert time.monotonic() - start < 20 and entries
    assert subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout.strip() == ""
