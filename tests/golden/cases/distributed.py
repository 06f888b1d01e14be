import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="nccl", type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=["nccl", "gloo"], default="nccl")
    return parser.parse_args()


def setup(rank, world, backend="nccl"):
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
    dist.init_process_group("nccl", rank=rank, world_size=world)
    init_process_group(backend="nccl", init_method="env://")
    dist.init_process_group(backend="cpu:gloo,cuda:nccl")
    group = dist.new_group(ranks=[0, 1], backend="nccl")
    assert backend in ["gloo", "nccl"]
    if dist.get_backend() == "nccl":
        dist.barrier()
    available = dist.is_nccl_available()
    kind = dist.Backend.NCCL
    return group, available, kind, torch.cuda.nccl.version()
