import torch
import torch.distributed as dist


def init(rank, backend="gloo"):
    if backend == "nccl" and not torch.cuda.is_available():
        raise RuntimeError("NCCL needs CUDA")
    dist.init_process_group(backend, rank=rank)
    if dist.get_backend() in ("nccl",):
        torch.cpu.set_device(rank)
