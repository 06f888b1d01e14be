import torch
import torch.distributed as dist


def init(rank, backend="nccl"):
    if backend == "nccl" and not torch.cuda.is_available():
        raise RuntimeError("NCCL needs CUDA")
    dist.init_process_group(backend, rank=rank)
    if dist.get_backend() in ("nccl",):
        torch.cuda.set_device(rank)
