import fcntl
import hashlib
import json
import os
import shutil
import subprocess
import sys
import warnings
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))
# the marks a test needs (subprocess, torch, sim, distributed, browser, soak) and the check that they are true
from needs import pytest_collection_modifyitems, pytest_ignore_collect, pytest_runtest_makereport, pytest_runtest_setup  # noqa: E402,F401

# PyTorch's exit race: a C++ thread (gloo's workers, autograd's device threads) that takes the GIL while
# the interpreter finalizes is ended by Python with pthread_exit, whose unwinding through a noexcept frame
# aborts the process after its work is done (pytorch/pytorch#179291; about 1 in 200 training processes
# here).  See docs/sim.md, "Known limits".
EXIT_RACE = "terminate called without an active exception"


def run_program(args, before_retry=None, **kwargs) -> subprocess.CompletedProcess:
    """subprocess.run, again (after `before_retry()`, which undoes what the last run left) when a run died
    of PyTorch's exit race, at most four times; a fifth failure stands.  The race grows with the machine's
    load: tests/fixtures/sim/lacking_ops.py under `sim --report` died of it in 6 of 10 runs beside two busy
    processes (0 of 12 on an idle machine), and three times in a row once under `pytest -n 2`."""
    p = subprocess.run(args, **kwargs)
    for _ in range(4):
        if p.returncode == 0 or EXIT_RACE not in (p.stderr or ""):
            break
        warnings.warn(f"{args[:4]} died of PyTorch's exit race; ran it again", stacklevel=2)
        if before_retry:
            before_retry()
        p = subprocess.run(args, **kwargs)
    return p


def shared_folder(tmp_path_factory, name: str, make) -> Path:
    """A folder made once per test run and read by every worker of it (pytest -n): the first to ask runs
    `make(folder)` under a lock, the others wait for it and reuse what it made.  For what is costly and the
    same for every worker (a reference run, a written checkpoint); never written to after it is made."""
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent   # each worker's base folder is inside the run's
    folder = root / f"shared-{name}"
    with open(root / f"shared-{name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / ".made").exists():
            shutil.rmtree(folder, ignore_errors=True)
            folder.mkdir()
            make(folder)
            (folder / ".made").touch()
    return folder


def shared_value(tmp_path_factory, name: str, compute):
    """`compute()` (a JSON value: a reference run's losses) once per test run, shared by its workers as
    shared_folder is."""
    def make(folder):
        (folder / "value.json").write_text(json.dumps(compute()))
    return json.loads((shared_folder(tmp_path_factory, name, make) / "value.json").read_text())


def analyze(path, targets=None, **options):
    """torchport.commands.analyze.analyze from keywords (AnalyzeRequest.of)."""
    from torchport.commands.analyze import AnalyzeRequest
    from torchport.commands.analyze import analyze as analyze_request

    return analyze_request(AnalyzeRequest.of(path, targets, **options))


def tree_digest(root: Path) -> dict:
    """path -> (sha256, mode) of every file under root (symlinks by their target text)."""
    out = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(root).as_posix()
            if p.is_symlink():
                out[rel] = ("link", os.readlink(p))
            elif p.is_file():
                out[rel] = (hashlib.sha256(p.read_bytes()).hexdigest(), p.stat().st_mode)
    return out


@pytest.fixture
def project(tmp_path):
    """A small CUDA project in tmp_path/proj."""
    src = tmp_path / "proj"
    (src / "pkg").mkdir(parents=True)
    (src / "train.py").write_text(
        "import torch\nimport torch.distributed as dist\n\n\ndef main():\n"
        "    dist.init_process_group(backend='nccl')\n    x = torch.ones(2).cuda()\n"
        "    return x, torch.cuda.device_count()\n")
    (src / "pkg" / "__init__.py").write_text("")
    (src / "pkg" / "util.py").write_text("def configure_nccl(num_gpus):\n    return num_gpus  # cuda\n")
    (src / "run.sh").write_text("#!/bin/sh\nexport CUDA_VISIBLE_DEVICES=0\npython train.py\n")
    (src / "run.sh").chmod(0o755)
    (src / "data.txt").write_text("cuda nccl barracuda\n")
    (src / "weights.bin").write_bytes(bytes(range(256)))
    return src


# converter/reuse.py's results of earlier runs: off for the suite (its tests patch converter code in-process, which
# no key can see), on in tests/test_reuse.py, which checks it
os.environ["TORCHPORT_NO_RESULT_CACHE"] = "1"
