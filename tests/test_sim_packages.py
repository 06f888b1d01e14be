"""The simulated device's stand-in package is the only vendor package a simulated process can find, as on that
vendor's machine (accelerate's is_mlu_available() probes find_spec("torch_mlu") and imports it when found)."""
import os
import subprocess
import sys

import pytest

from torchport.sim import simulated_targets
from torchport.sim.launch import environment

pytestmark = pytest.mark.subprocess

PROBE = "import importlib.util as u; print(*(bool(u.find_spec(p)) for p in ('torch_npu', 'torch_mlu', 'torch_musa')))"
REGISTERS = {"npu": "torch_npu", "mlu": "torch_mlu", "musa": "torch_musa"}


@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_only_the_simulated_vendors_package_is_found(target):
    assert target in simulated_targets()
    env = dict(os.environ, **environment(target))
    found = subprocess.run([sys.executable, "-c", PROBE], env=env, capture_output=True, text=True, timeout=60)
    assert found.returncode == 0, found.stderr
    assert found.stdout.split() == [str(REGISTERS[t] == REGISTERS[target]) for t in ("npu", "mlu", "musa")]
    assert env["PYTHONPATH"].split(os.pathsep)[0].endswith(os.path.join("packages", target))
