import torch
import torch_npu  # noqa: F401
import torch.distributed as dist

NCCL = "hccl"
KNOWN = [NCCL, "gloo"]


def init(backend):
    if backend == NCCL and not torch.npu.is_available():
        raise RuntimeError("Nccl backend is required but no cuda capable devices")
    dist.init_process_group(backend)
    if backend == "hccl":
        dist.barrier(device_ids=[torch.npu.current_device()])


def launch():
    init(NCCL)
    dist.new_group(ranks=[0], backend=NCCL)
