import torch
import torch.distributed as dist

NCCL = dist.Backend.NCCL
KNOWN = [NCCL, "gloo"]


def init(backend):
    if backend == (torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if torch.accelerator.is_available() else None) and not torch.accelerator.is_available():
        raise RuntimeError("Nccl backend is required but no cuda capable devices")
    dist.init_process_group(backend)
    if backend == (torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if torch.accelerator.is_available() else None):
        dist.barrier(device_ids=[torch.accelerator.current_device_index()])


def launch():
    init(NCCL)
    dist.new_group(ranks=[0], backend=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")))
