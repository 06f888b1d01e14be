import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")), type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=[torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")), "gloo"], default=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")))
    return parser.parse_args()


def setup(rank, world, backend="nccl"):
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
    dist.init_process_group(torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")), rank=rank, world_size=world)
    init_process_group(backend=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")), init_method="env://")
    dist.init_process_group(backend="cpu:gloo,cuda:nccl")
    group = dist.new_group(ranks=[0, 1], backend=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")))
    assert backend in ["gloo", (torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if torch.accelerator.is_available() else None)]
    if dist.get_backend() == (torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if torch.accelerator.is_available() else None):
        dist.barrier()
    available = dist.is_backend_available(torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")))
    kind = torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu"))
    return group, available, kind, torch.cuda.nccl.version()
