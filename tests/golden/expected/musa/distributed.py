import argparse
import os

import torch
import torch_musa  # noqa: F401
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="mccl", type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=["mccl", "gloo"], default="mccl")
    return parser.parse_args()


def setup(rank, world, backend="mccl"):
    os.environ["MCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_MCCL_BLOCKING_WAIT", "1")
    dist.init_process_group("mccl", rank=rank, world_size=world)
    init_process_group(backend="mccl", init_method="env://")
    dist.init_process_group(backend="cpu:gloo,musa:mccl")
    group = dist.new_group(ranks=[0, 1], backend="mccl")
    assert backend in ["gloo", "mccl"]
    if dist.get_backend() == "mccl":
        dist.barrier()
    available = dist.is_backend_available("mccl")
    kind = "mccl"
    return group, available, kind, torch.cuda.nccl.version()
