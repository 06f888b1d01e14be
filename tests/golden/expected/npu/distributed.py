import argparse
import os

import torch
import torch_npu  # noqa: F401
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="hccl", type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=["hccl", "gloo"], default="hccl")
    return parser.parse_args()


def setup(rank, world, backend="hccl"):
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_HCCL_BLOCKING_WAIT", "1")
    dist.init_process_group("hccl", rank=rank, world_size=world)
    init_process_group(backend="hccl", init_method="env://")
    dist.init_process_group(backend="cpu:gloo,npu:hccl")
    group = dist.new_group(ranks=[0, 1], backend="hccl")
    assert backend in ["gloo", "hccl"]
    if dist.get_backend() == "hccl":
        dist.barrier()
    available = dist.is_backend_available("hccl")
    kind = "hccl"
    return group, available, kind, torch.cuda.nccl.version()
