import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="xccl", type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=["xccl", "gloo"], default="xccl")
    return parser.parse_args()


def setup(rank, world, backend="xccl"):
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
    dist.init_process_group("xccl", rank=rank, world_size=world)
    init_process_group(backend="xccl", init_method="env://")
    dist.init_process_group(backend="cpu:gloo,xpu:xccl")
    group = dist.new_group(ranks=[0, 1], backend="xccl")
    assert backend in ["gloo", "xccl"]
    if dist.get_backend() == "xccl":
        dist.barrier()
    available = dist.is_backend_available("xccl")
    kind = "xccl"
    return group, available, kind, torch.cuda.nccl.version()
