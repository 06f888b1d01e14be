"""The target's collective backend (`hccl`, `cncl`, `mccl`) on the simulated device, carried by gloo.

The device's memory is host memory, so each collective hands gloo CPU tensors that alias the
device tensors (no copies): results land in the device tensors themselves.  Registered with
torch.distributed under the target's backend name for the simulated device type, so
`init_process_group("hccl")`, every `dist.*` collective, the functional collectives, DDP, FSDP (both
APIs) and ZeRO work as on the hardware.

What the vendor's process group refuses, the simulated one refuses first, with the vendor's message:
tensors off the device, reduce ops and dtypes it rejects, methods it lacks (`recv` without a source).
Those rules are data, read from the vendors' sources: kb/sim/dist.toml (`VendorRules` loads it).

torch 2.13 cannot subclass c10d's C++ `Backend` from Python (it has no Python constructor), so the
simulated backend is a Python `ProcessGroup`: it overrides every collective method torch's Python API
and its C++ trampoline call (`METHODS`; a test holds that list to torch's ProcessGroup).
"""
from __future__ import annotations

import importlib
import sys
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from pathlib import Path

import torch
import torch.distributed as dist
from torch._C._distributed_c10d import AllgatherOptions

from .namespace import VendorModule

RULES_FILE = Path(__file__).resolve().parents[1] / "kb" / "sim" / "dist.toml"
# torch 2.13's ProcessGroup methods that move tensors, each overridden below
METHODS = ("allreduce", "allreduce_coalesced", "broadcast", "reduce", "allgather", "allgather_coalesced",
           "all_gather_single", "all_gather_single_coalesced", "allgather_into_tensor_coalesced", "_allgather_base",
           "gather", "scatter", "reduce_scatter", "reduce_scatter_single", "reduce_scatter_single_coalesced",
           "reduce_scatter_tensor_coalesced", "_reduce_scatter_base", "alltoall", "all_to_all_single",
           "alltoall_base", "barrier", "monitored_barrier", "send", "recv", "recv_anysource")
ERRORS = {"RuntimeError": RuntimeError, "ValueError": ValueError, "TypeError": TypeError}


def _error(entry: dict, **fields) -> Exception:
    kind, _, message = entry["error"].partition(": ")
    return ERRORS[kind](message.format(**fields))


@dataclass(frozen=True)
class VendorRules:
    """One backend's section of kb/sim/dist.toml."""
    name: str
    device_error: dict
    raises: dict        # method -> {error, at}
    reduce_ops: dict    # ReduceOp name -> {error, at}
    bool_avg: dict      # {error, at} or {}
    dtypes: dict        # dtype name -> {error | compute_as, at}
    functions: dict     # reducing method -> the vendor's function name
    implements: dict    # method -> {at}


@cache
def vendor_rules(backend: str) -> VendorRules:
    from ..core.tomlfile import tomllib

    table = tomllib.loads(RULES_FILE.read_text())[backend]
    return VendorRules(backend, table["device_error"], table.get("raises", {}), table.get("reduce_ops", {}),
                       table.get("bool_avg", {}), table.get("dtypes", {}), table.get("functions", {}),
                       table.get("implements", {}))


def _flat(tensors) -> list:
    out = []
    for t in tensors:
        out.extend(_flat(t) if isinstance(t, (list, tuple)) else [t])
    return out


def _done() -> dist.Work:
    future: torch.futures.Future[None] = torch.futures.Future()
    future.set_result(None)
    return torch._C._distributed_c10d._create_work_from_future(future)  # type: ignore[attr-defined]  # unstubbed


class PointToPointWork(dist.Work):
    """gloo's send/recv work, holding the device tensors until it is done (the hardware's work keeps its tensors
    too: a temporary handed to isend must not be freed while gloo reads it), and waited on once: a second wait on
    gloo's own work would wait for a second message."""

    def __init__(self, work, tensors):
        super().__init__()
        self._work, self._tensors, self._done = work, tensors, False

    def wait(self, timeout=None):
        if not self._done:
            self._work.wait() if timeout is None else self._work.wait(timeout)
            self._done, self._tensors = True, None
        return True

    def is_completed(self):
        return self._done or self._work.is_completed()

    def is_success(self):
        return self._work.is_success()

    def source_rank(self):
        return self._work.source_rank()


class SimulatedProcessGroup(dist.ProcessGroup):
    """A process group for the simulated device: the vendor's checks, then gloo on host aliases."""

    def __init__(self, store, rank: int, size: int, timeout, backend_name: str, device_type: str, alias):
        super().__init__(rank, size)  # type: ignore[call-arg]  # torch's stub lacks the binding's (rank, size) overload
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout if isinstance(timeout, timedelta)
                                           else timedelta(minutes=30))
        self._name = backend_name
        self._device = device_type
        self._alias = alias
        self._rules = vendor_rules(backend_name)
        self._group_name = self._group_desc = ""

    def getBackendName(self):   # noqa: N802 - torch's name
        return self._name

    # torch keeps a group's name and description in its device backends, which a Python group has none of
    def getGroupName(self):   # noqa: N802 - torch's name
        return self._group_name

    def setGroupName(self, name):   # noqa: N802 - torch's name
        self._group_name = name

    def getGroupDesc(self):   # noqa: N802 - torch's name
        return self._group_desc

    def setGroupDesc(self, desc):   # noqa: N802 - torch's name
        self._group_desc = desc

    @property
    def _device_types(self):   # object collectives and barrier pick their device from this, as for hccl
        return [torch.device(self._device)]

    # ------------------------------------------------------------------ the vendor's checks
    def _check(self, method: str, tensors=(), opts=None) -> str | None:
        """Raise what the vendor raises for this call; return the dtype to reduce in when the vendor
        reduces in another one (CNCL's float64 as float32), else None."""
        rules = self._rules
        if method in rules.raises:
            raise _error(rules.raises[method])
        flat = [t for t in _flat(tensors) if isinstance(t, torch.Tensor)]
        for t in flat:
            if t.device.type != self._device or t.layout != torch.strided:
                raise _error(rules.device_error)
        op = getattr(opts, "reduceOp", None)
        if op is None or method not in rules.functions or not flat:
            return None
        dtype = str(flat[0].dtype).removeprefix("torch.")
        rule = rules.dtypes.get(dtype, {})
        if "error" in rule:
            raise _error(rule, function=rules.functions[method])
        for name, entry in rules.reduce_ops.items():
            if op == getattr(dist.ReduceOp, name):
                raise _error(entry)
        if rules.bool_avg and dtype == "bool" and op == dist.ReduceOp.AVG:
            raise _error(rules.bool_avg)
        return rule.get("compute_as")

    # ------------------------------------------------------------------ handing to gloo
    def _host(self, tensors):
        return [self._host(t) if isinstance(t, (list, tuple)) else self._alias(t) for t in tensors]

    def _reduce(self, method, run, outputs, inputs, opts):
        """A reducing collective: checked, then run by `run(outputs, inputs)` on host tensors; where the
        vendor reduces in another dtype, on copies in that dtype, written back."""
        compute_as = self._check(method, [outputs, inputs], opts)
        host_out, host_in = self._host(outputs), self._host(inputs)
        if compute_as is None:
            return self._wait(run(host_out, host_in))
        dtype = getattr(torch, compute_as)
        cast = lambda ts: [cast(t) if isinstance(t, list) else t.to(dtype) for t in ts]  # noqa: E731
        out_c = cast(host_out)
        in_c = out_c if inputs is outputs else cast(host_in)
        work = self._wait(run(out_c, in_c))
        for dst, src in zip(_flat(host_out), _flat(out_c)):
            dst.copy_(src)
        return work

    @staticmethod
    def _wait(work):
        # a collective is done when it returns (torch waits on it again, which gloo's collective works allow)
        work.wait()
        return work

    # ------------------------------------------------------------------ reducing collectives
    def allreduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceOptions()
        return self._reduce("allreduce", lambda o, i: self._gloo.allreduce(o, opts), tensors, tensors, opts)

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        return self._reduce("allreduce_coalesced", lambda o, i: self._gloo.allreduce_coalesced(o, opts),
                            tensors, tensors, opts)

    def reduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceOptions()
        return self._reduce("reduce", lambda o, i: self._gloo.reduce(o, opts), tensors, tensors, opts)

    def reduce_scatter(self, outputs, input_lists, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        return self._reduce("reduce_scatter", lambda o, i: self._gloo.reduce_scatter(o, i, opts),
                            outputs, input_lists, opts)

    def reduce_scatter_single(self, output, input, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        return self._reduce("reduce_scatter_single", lambda o, i: self._gloo._reduce_scatter_base(o[0], i[0], opts),
                            [output], [input], opts)

    def reduce_scatter_single_coalesced(self, outputs, inputs, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()

        def run(outs, ins):
            for out, inp in zip(outs, ins):
                self._gloo._reduce_scatter_base(out, inp, opts).wait()
            return _done()
        return self._reduce("reduce_scatter_single_coalesced", run, outputs, inputs, opts)

    _reduce_scatter_base = reduce_scatter_single
    reduce_scatter_tensor_coalesced = reduce_scatter_single_coalesced

    # ------------------------------------------------------------------ collectives that move data
    def broadcast(self, tensors, opts=None):
        self._check("broadcast", tensors)
        return self._wait(self._gloo.broadcast(self._host(tensors), opts or dist.BroadcastOptions()))

    def allgather(self, output_lists, inputs, opts=None):
        self._check("allgather", [output_lists, inputs])
        return self._wait(self._gloo.allgather(self._host(output_lists), self._host(inputs),
                                               opts or AllgatherOptions()))

    def allgather_coalesced(self, output_lists, inputs, opts=None):
        self._check("allgather_coalesced", [output_lists, inputs])
        return self._wait(self._gloo.allgather_coalesced(self._host(output_lists), self._host(inputs),
                                                         opts or AllgatherOptions()))

    def all_gather_single(self, output, input, opts=None):
        self._check("all_gather_single", [output, input])
        return self._wait(self._gloo._allgather_base(self._alias(output), self._alias(input),
                                                     opts or AllgatherOptions()))

    def all_gather_single_coalesced(self, outputs, inputs, opts=None):
        self._check("all_gather_single_coalesced", [outputs, inputs])
        for out, inp in zip(outputs, inputs):
            self._gloo._allgather_base(self._alias(out), self._alias(inp), opts or AllgatherOptions()).wait()
        return _done()

    _allgather_base = all_gather_single
    allgather_into_tensor_coalesced = all_gather_single_coalesced

    def gather(self, output_lists, inputs, opts=None):
        self._check("gather", [output_lists, inputs])
        return self._wait(self._gloo.gather(self._host(output_lists), self._host(inputs),
                                            opts or dist.GatherOptions()))

    def scatter(self, outputs, input_lists, opts=None):
        self._check("scatter", [outputs, input_lists])
        return self._wait(self._gloo.scatter(self._host(outputs), self._host(input_lists),
                                             opts or dist.ScatterOptions()))

    def alltoall(self, outputs, inputs, opts=None):
        self._check("alltoall", [outputs, inputs])
        return self._wait(self._gloo.alltoall(self._host(outputs), self._host(inputs),
                                              opts or dist.AllToAllOptions()))

    def all_to_all_single(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        self._check("all_to_all_single", [output, input])
        return self._wait(self._gloo.alltoall_base(self._alias(output), self._alias(input), output_split_sizes,
                                                   input_split_sizes, opts or dist.AllToAllOptions()))

    alltoall_base = all_to_all_single

    def barrier(self, opts=None):
        self._check("barrier")
        return self._wait(self._gloo.barrier(opts or dist.BarrierOptions()))

    def monitored_barrier(self, timeout=None, wait_all_ranks=False):
        self._check("monitored_barrier")
        return self._gloo.monitored_barrier(timeout, wait_all_ranks)

    def _start_coalescing(self, device):   # every call runs at once, so there is nothing to coalesce
        pass

    def _end_coalescing(self, device):
        return _done()

    # ------------------------------------------------------------------ point to point
    def send(self, tensors, dst, tag=0):
        self._check("send", tensors)
        return PointToPointWork(self._gloo.send(self._host(tensors), dst, tag), tensors)

    def recv(self, tensors, src, tag=0):
        self._check("recv", tensors)
        return PointToPointWork(self._gloo.recv(self._host(tensors), src, tag), tensors)

    def recv_anysource(self, tensors, tag=0):
        self._check("recv_anysource", tensors)
        return PointToPointWork(self._gloo.recv_anysource(self._host(tensors), tag), tensors)


def register(backend_name: str, device_type: str, alias) -> None:
    """Make `backend_name` a torch.distributed backend for the simulated `device_type` (once)."""
    if backend_name.upper() in dist.Backend.backend_list or backend_name in dist.Backend.backend_list:
        return

    def create(store, rank, size, timeout):
        return SimulatedProcessGroup(store, rank, size, timeout, backend_name, device_type, alias)

    dist.Backend.register_backend(backend_name, create, devices=[device_type])


def add_python_api(backend_name: str) -> list:
    """What importing the vendor's package adds to Python for `backend_name` (kb/sim/dist.toml [<backend>.python]):
    its availability function (torch.distributed.is_hccl_available...) on each module the vendor puts it on; a
    module of the vendor's own package (torch_npu.distributed) is made as a stand-in of its public names.  Returns
    the names of the modules it made."""
    from ..core.tomlfile import tomllib

    section = tomllib.loads(RULES_FILE.read_text())[backend_name]
    table = section.get("python")
    if not table:
        return []
    rule = table["available"]
    registered = rule["answer"] == "registered"

    def available() -> bool:
        return backend_name in dist.Backend.backend_list if registered else True

    available.__name__ = available.__qualname__ = rule["name"]
    available.__doc__ = f"Whether the {backend_name.upper()} backend is available (torchport simulator: {rule['at']})."
    made = []
    for path, where in sorted(table["modules"].items(), key=lambda item: item[0].count(".")):   # parents first
        if "names" in where:   # the vendor package's own module: a stand-in of its names
            module = sys.modules.get(path)
            if module is None:
                module = sys.modules[path] = VendorModule(path, where["names"], source=f"{section['repo']} {where['at']}")
                parent, _, leaf = path.rpartition(".")
                if parent in sys.modules:
                    setattr(sys.modules[parent], leaf, module)
                made.append(path)
        else:
            module = sys.modules.get(path) or importlib.import_module(path)
        setattr(module, rule["name"], available)
    return made
