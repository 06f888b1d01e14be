import torch
import torch.distributed as dist


def init(rank, backend="nccl"):
    if backend == (torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if torch.accelerator.is_available() else None) and not torch.accelerator.is_available():
        raise RuntimeError("NCCL needs CUDA")
    dist.init_process_group(backend, rank=rank)
    if dist.get_backend() in ((torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if torch.accelerator.is_available() else None),):
        if torch.accelerator.is_available(): torch.accelerator.set_device_index(rank)
