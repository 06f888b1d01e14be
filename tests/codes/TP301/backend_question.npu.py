import torch
import torch_npu  # noqa: F401
import torch.distributed as dist


def init(rank, backend="hccl"):
    if backend == "hccl" and not torch.npu.is_available():
        raise RuntimeError("NCCL needs CUDA")
    dist.init_process_group(backend, rank=rank)
    if dist.get_backend() in ("hccl",):
        torch.npu.set_device(rank)
