"""torchport explain: every known message is recognised, in a log full of noise too; unknown errors
get the nearest known ones."""
import json
import os
import re
import subprocess
import sys

import pytest
from conftest import ROOT

from torchport.doctor.explain import explain, known_errors

ENTRIES = known_errors()
ENV = dict(os.environ, PYTHONPATH=str(ROOT / "src"))


def test_the_data_is_sound():
    ids = [e.id for e in ENTRIES]
    assert len(ids) == len(set(ids)) and len(ids) >= 40
    for e in ENTRIES:
        assert e.target in ("npu", "mlu", "musa", "any") and e.source and e.cause and e.fix and e.title
        assert all(rx.search(e.example) for rx in e.regexes), e.id
        for other in ENTRIES:
            if other is not e:
                assert not any(rx.search(other.example) for rx in e.regexes), f"{e.id} also matches {other.id}"
    required = {"npu-exchange-device", "npu-helpaclexecute", "npu-libhccl-missing", "npu-op-not-implemented",
                "musa-libmudnn-missing", "musa-extension-impl-not-found", "mlu-kernel-device-mismatch",
                "any-torch-not-compiled-cuda"}
    assert required <= set(ids)


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_each_known_message_is_explained(entry):
    matches, nearest = explain(entry.example)
    assert [m.error.id for m in matches] == [entry.id] and nearest == []


def test_a_log_with_one_error_among_noise(tmp_path):
    noise = [f"epoch {i} step {j} loss {0.5 / (j + 1):.4f} lr 0.01" for i in range(3) for j in range(40)]
    log = noise[:70] + ["Traceback (most recent call last):", '  File "train.py", line 12, in <module>',
                        "    import torch_musa",
                        "ImportError: libmudnn.so.1: cannot open shared object file: No such file or directory"] + noise[70:]
    path = tmp_path / "train.log"
    path.write_text("\n".join(log) + "\n")
    matches, _ = explain(path.read_text())
    assert [(m.error.id, m.line) for m in matches] == [("musa-libmudnn-missing", 74)]
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", str(path)], capture_output=True,
                       text=True, env=ENV)
    assert p.returncode == 0 and "muDNN library not found" in p.stdout and "(line 74)" in p.stdout
    assert "export LD_LIBRARY_PATH" in p.stdout and "seed 004" in p.stdout


def test_unknown_errors_get_the_nearest_known_ones():
    matches, nearest = explain("RuntimeError: MUSA kernel image is invalid for this device arch")
    assert matches == [] and len(nearest) == 3
    assert all(m.error.target in ("musa", "any") for m in nearest[:2]), "the text names musa: its entries come first"
    assert nearest[0].score >= nearest[-1].score
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--json", "something odd happened: error 42"],
                       capture_output=True, text=True, env=ENV)
    data = json.loads(p.stdout)
    assert p.returncode == 1 and data["known"] is False and len(data["matches"]) == 3


def test_target_filter_and_bad_input():
    nccl = "RuntimeError: Distributed package doesn't have NCCL built in"
    assert [m.error.id for m in explain(nccl, target="npu")[0]] == ["any-nccl-not-built"]
    only_mlu = explain("RuntimeError: ExchangeDevice:", target="mlu")[0]
    assert only_mlu == []
    p = subprocess.run([sys.executable, "-m", "torchport", "explain"], capture_output=True, text=True, env=ENV)
    assert p.returncode == 2 and "nothing to explain" in p.stderr
    p = subprocess.run([sys.executable, "-m", "torchport", "explain", "--file", "/nonexistent.log"],
                       capture_output=True, text=True, env=ENV)
    assert p.returncode == 2 and "cannot read" in p.stderr
    assert not re.search("Traceback", p.stderr)
