"""The target's collective backend (`hccl`, `cncl`, `mccl`) on the simulated device, carried by gloo.

The device's memory is host memory, so each collective hands gloo CPU tensors that alias the
device tensors (no copies) and waits for it: results land in the device tensors themselves.
Registered with torch.distributed under the target's backend name for the simulated device type,
so `init_process_group("hccl")`, `dist.all_reduce` and DDP work as they would on the hardware.
"""
from __future__ import annotations

from datetime import timedelta

import torch.distributed as dist


def _host(tensors, alias):
    return [alias(t) for t in tensors]


class SimulatedProcessGroup(dist.ProcessGroup):
    """A process group for the simulated device: every collective is gloo on host aliases."""

    def __init__(self, store, rank: int, size: int, timeout, backend_name: str, alias):
        super().__init__(rank, size)
        self._gloo = dist.ProcessGroupGloo(store, rank, size, timeout if isinstance(timeout, timedelta)
                                           else timedelta(minutes=30))
        self._name = backend_name
        self._alias = alias

    def getBackendName(self):   # noqa: N802 - torch's name
        return self._name

    def _run(self, work):
        work.wait()
        return work

    def allreduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceOptions()
        return self._run(self._gloo.allreduce(_host(tensors, self._alias), opts))

    def allreduce_coalesced(self, tensors, opts=None):
        opts = opts if opts is not None else dist.AllreduceCoalescedOptions()
        return self._run(self._gloo.allreduce_coalesced(_host(tensors, self._alias), opts))

    def broadcast(self, tensors, opts=None):
        opts = opts if opts is not None else dist.BroadcastOptions()
        return self._run(self._gloo.broadcast(_host(tensors, self._alias), opts))

    def reduce(self, tensors, opts=None):
        opts = opts if opts is not None else dist.ReduceOptions()
        return self._run(self._gloo.reduce(_host(tensors, self._alias), opts))

    def allgather(self, output_lists, inputs, opts=None):
        opts = opts if opts is not None else dist.AllgatherOptions()
        outs = [_host(ol, self._alias) for ol in output_lists]
        return self._run(self._gloo.allgather(outs, _host(inputs, self._alias), opts))

    def _allgather_base(self, output, input, opts=None):
        opts = opts if opts is not None else dist.AllgatherOptions()
        return self._run(self._gloo._allgather_base(self._alias(output), self._alias(input), opts))

    def allgather_into_tensor_coalesced(self, outputs, inputs, opts=None):
        for out, inp in zip(outputs, inputs):
            self._allgather_base(out, inp, opts)
        return self._gloo.barrier()

    def gather(self, output_lists, inputs, opts=None):
        opts = opts if opts is not None else dist.GatherOptions()
        outs = [_host(ol, self._alias) for ol in output_lists]
        return self._run(self._gloo.gather(outs, _host(inputs, self._alias), opts))

    def scatter(self, outputs, input_lists, opts=None):
        opts = opts if opts is not None else dist.ScatterOptions()
        ins = [_host(il, self._alias) for il in input_lists]
        return self._run(self._gloo.scatter(_host(outputs, self._alias), ins, opts))

    def reduce_scatter(self, outputs, input_lists, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        ins = [_host(il, self._alias) for il in input_lists]
        return self._run(self._gloo.reduce_scatter(_host(outputs, self._alias), ins, opts))

    def _reduce_scatter_base(self, output, input, opts=None):
        opts = opts if opts is not None else dist.ReduceScatterOptions()
        return self._run(self._gloo._reduce_scatter_base(self._alias(output), self._alias(input), opts))

    def alltoall_base(self, output, input, output_split_sizes, input_split_sizes, opts=None):
        opts = opts if opts is not None else dist.AllToAllOptions()
        return self._run(self._gloo.alltoall_base(self._alias(output), self._alias(input),
                                                  output_split_sizes, input_split_sizes, opts))

    def barrier(self, opts=None):
        opts = opts if opts is not None else dist.BarrierOptions()
        return self._run(self._gloo.barrier(opts))

    def send(self, tensors, dst, tag=0):
        return self._run(self._gloo.send(_host(tensors, self._alias), dst, tag))

    def recv(self, tensors, src, tag=0):
        return self._run(self._gloo.recv(_host(tensors, self._alias), src, tag))

    def recv_anysource(self, tensors, tag=0):
        return self._run(self._gloo.recv_anysource(_host(tensors, self._alias), tag))


def register(backend_name: str, device_type: str, alias) -> None:
    """Make `backend_name` a torch.distributed backend for the simulated `device_type` (once)."""
    if backend_name.upper() in dist.Backend.backend_list or backend_name in dist.Backend.backend_list:
        return

    def create(store, rank, size, timeout):
        return SimulatedProcessGroup(store, rank, size, timeout, backend_name, alias)

    dist.Backend.register_backend(backend_name, create, devices=[device_type])
