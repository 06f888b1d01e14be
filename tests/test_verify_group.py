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
    from torchport.migrate import KEPT_HEAD, KEPT_TAIL, run_verify

    script = ("import sys\nfor _ in range(40):\n    sys.stdout.write('x' * 1_000_000)\n"
              "sys.stdout.write('\\nTraceback: the end\\n')\n")
    echoed = []
    done = run_verify(load_target("cpu"), ["python", "-c", script], tmp_path, echoed.append)
    assert done.exit_code == 0
    assert len(done.output) < KEPT_HEAD + KEPT_TAIL + 200
    assert done.output.endswith("Traceback: the end\n") and "characters of output left out" in done.output
    assert max(len(line) for line in echoed) <= 4096 and echoed[-1] == "Traceback: the end"
