"""The simulated collective backends (hccl, cncl, mccl): every torch.distributed entry point on 2 simulated
devices gives what gloo gives on 2 CPU processes, FSDP and ZeRO train to the same losses, and what the vendor
refuses is refused with the vendor's message (kb/sim/dist.toml) while gloo takes it."""
import json
import os
import sys

import pytest
from conftest import ROOT, run_program, shared_value

from torchport.core.tomlfile import tomllib

SCRIPT = ROOT / "tests" / "fixtures" / "sim" / "dist_entry_points.py"
RULES = ROOT / "src" / "torchport" / "kb" / "sim" / "dist.toml"
ENV = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "OMP_NUM_THREADS": "1", "PYTHONWARNINGS": "ignore"}
ENV.pop("TORCHPORT_TARGET", None)
TORCHRUN = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node", "2", str(SCRIPT)]
F64_VALUES_AS_FLOAT32 = [0.20000000298023224, 0.6666666865348816]
# what each vendor does where gloo (the cpu target) just computes: read in their sources (kb/sim/dist.toml cites them)
VENDOR_CHECKS = {
    "npu": {"float64_sum": "RuntimeError: HCCL allreduce: Unsupported data type at::kDouble",
            "float64_values": "RuntimeError: HCCL allreduce: Unsupported data type at::kDouble",
            "band": "RuntimeError: Cannot use ReduceOp.BAND with HCCL",
            "bor": "RuntimeError: Cannot use ReduceOp.BOR with HCCL",
            "cpu_tensor": "RuntimeError: Tensors must be NPU and dense"},
    "mlu": {"float64_values": F64_VALUES_AS_FLOAT32,
            "band": "ValueError: Cannot use ReduceOp.BAND with CNCL",
            "bor": "ValueError: Cannot use ReduceOp.BOR with CNCL",
            "cpu_tensor": "RuntimeError: Tensors must be MLU and dense"},
    "musa": {"band": "RuntimeError: Unexpected ReduceOp: 5",
             "bor": "RuntimeError: Unexpected ReduceOp: 6",
             "cpu_tensor": "RuntimeError: Tensors must be MUSA and dense"},
}


def results(command) -> dict:
    p = run_program(command, capture_output=True, text=True, env=ENV, timeout=600)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout.split("RESULT ", 1)[1].splitlines()[0])


@pytest.fixture(scope="module")
def gloo(tmp_path_factory):
    return shared_value(tmp_path_factory, "dist-entry-points-cpu", lambda: results([*TORCHRUN, "cpu"]))


@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.distributed
@pytest.mark.parametrize("target", ["npu", "mlu", "musa"])
def test_every_entry_point_fsdp_and_zero_on_two_simulated_devices(gloo, target):
    got = results([sys.executable, "-m", "torchport", "sim", "--to", target, "--devices", "2", "--",
                   *TORCHRUN, target])
    # the reference itself: gloo takes everything the vendors refuse
    assert gloo["band"] == [0, 3] and gloo["float64_values"] == [0.2, 0.6666666666666666]
    assert gloo["cpu_tensor"] == "ok" and gloo["avg"] == [1.5, 3.0]
    assert len(gloo["fsdp"]) == 4 and gloo["fsdp"][0] > gloo["fsdp"][-1]
    checks = VENDOR_CHECKS[target]
    expected = {**gloo, **checks}
    assert set(got) == set(expected)
    for name in expected:
        if name in ("fsdp", "fsdp2", "zero"):
            assert got[name] == pytest.approx(expected[name], abs=1e-6), name
        else:
            assert got[name] == expected[name], name


@pytest.mark.torch
def test_the_simulated_group_overrides_every_collective_of_torchs_process_group():
    """A ProcessGroup method the simulated group does not override reaches the C++ base class, which looks for
    a device backend and finds none ('No backend type associated with device type npu'): the failure the
    audit found for all_gather_into_tensor under torch 2.13.  A new torch that adds one fails here first."""
    import torch.distributed as dist

    from torchport.sim.collectives import METHODS, SimulatedProcessGroup

    not_collectives = {"abort", "boxed", "bound_device_id", "get_group_store", "group_desc", "group_name", "name",
                       "rank", "size", "set_timeout", "shutdown", "split_group", "merge_remote_group", "unbox",
                       "use_pg_for_symm_mem_rendezvous", "BackendType", "CUSTOM", "GLOO", "MPI", "NCCL", "UCC",
                       "UNDEFINED", "XCCL"}
    public = {n for n in dir(dist.ProcessGroup) if not n.startswith("_")} - not_collectives
    assert public <= set(METHODS), sorted(public - set(METHODS))
    for name in METHODS:
        assert name in SimulatedProcessGroup.__dict__, name


@pytest.mark.torch
def test_the_vendor_rules_name_real_methods_and_cite_their_source():
    from torchport.sim.collectives import METHODS, vendor_rules

    data = tomllib.loads(RULES.read_text())
    assert set(data) == {"hccl", "cncl", "mccl"}
    for backend in data:
        rules = vendor_rules(backend)
        assert set(rules.implements) | set(rules.raises) <= set(METHODS)
        assert not set(rules.implements) & set(rules.raises)
        assert {"send", "recv", "alltoall", "all_gather_single", "reduce_scatter_single"} <= set(rules.implements)
        assert "recv_anysource" in rules.raises
        entries = [rules.device_error, *rules.raises.values(), *rules.reduce_ops.values(), *rules.dtypes.values()]
        for entry in entries:
            assert ":" in entry["at"] and ("error" in entry or "compute_as" in entry), (backend, entry)
        assert set(rules.reduce_ops) == {"BAND", "BOR", "BXOR"}
    # HCCL takes float64 on Ascend950 only: the rules hold for every chip the npu target can simulate
    from torchport.sim import chips

    assert data["hccl"]["chip"] == "Ascend910B" and chips.device("npu").name.startswith("Ascend910B")
    assert not any("950" in name for name in chips.chip_names("npu"))
    assert "error" in data["hccl"]["dtypes"]["float64"]


def test_the_python_each_vendor_adds_for_its_backend_is_data_with_sources():
    """kb/sim/dist.toml [<backend>.python]: the availability function each vendor's package adds on import
    (torch.distributed.is_hccl_available ...), where it is put, each with the line of the vendor's source."""
    data = tomllib.loads(RULES.read_text())
    for backend, section in data.items():
        python = section["python"]
        available = python["available"]
        assert available["name"] == f"is_{backend}_available"
        assert available["answer"] in ("registered", "true") and ":" in available["at"]
        assert "torch.distributed" in python["modules"], backend
        for path, where in python["modules"].items():
            assert ":" in where["at"], (backend, path)
            assert available["name"] in where.get("names", [available["name"]]), (backend, path)
    # torch_npu's function asks whether hccl is registered; torch_mlu's and torch_musa's are a constant True
    assert data["hccl"]["python"]["available"]["answer"] == "registered"
    assert {"torch_npu.distributed", "torch_npu.distributed.distributed_c10d"} <= set(data["hccl"]["python"]["modules"])


@pytest.mark.torch
@pytest.mark.sim
@pytest.mark.subprocess
def test_import_torch_npu_gives_is_hccl_available_and_torch_npu_distributed():
    """A new-user trial: converted pytorch-ignite 0.5.5 calls dist.is_hccl_available() on import, and the simulated
    torch_npu had neither it nor torch_npu.distributed (real torch_npu has both)."""
    probe = ("import torch, torch_npu, torch.distributed as d\n"
             "print('torch.distributed.is_hccl_available:', hasattr(d, 'is_hccl_available'), d.is_hccl_available())\n"
             "import torch_npu.distributed as nd\n"
             "print('torch_npu.distributed.is_hccl_available:', nd.is_hccl_available is d.is_hccl_available)\n"
             "print('backends:', d.is_backend_available('hccl'), d.is_nccl_available())\n")
    p = run_program([sys.executable, "-m", "torchport", "sim", "--to", "npu", "--", "python", "-c", probe],
                    capture_output=True, text=True, env=ENV, timeout=300)
    assert p.returncode == 0, p.stderr[-3000:]
    assert "torch.distributed.is_hccl_available: True True" in p.stdout
    assert "torch_npu.distributed.is_hccl_available: True" in p.stdout
    assert "backends: True False" in p.stdout   # the sim adds hccl; nccl stays CPU torch's answer (no run mapping)
