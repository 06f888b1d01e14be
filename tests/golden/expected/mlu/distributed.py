import argparse
import os

import torch
import torch_mlu  # noqa: F401
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="cncl", type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=["cncl", "gloo"], default="cncl")
    return parser.parse_args()


def setup(rank, world, backend="cncl"):
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_CNCL_BLOCKING_WAIT", "1")
    dist.init_process_group("cncl", rank=rank, world_size=world)
    init_process_group(backend="cncl", init_method="env://")
    dist.init_process_group(backend="cpu:gloo,mlu:cncl")
    group = dist.new_group(ranks=[0, 1], backend="cncl")
    assert backend in ["gloo", "cncl"]
    if dist.get_backend() == "cncl":
        dist.barrier()
    available = dist.is_backend_available("cncl")
    kind = "cncl"
    return group, available, kind, torch.mlu.cncl.version()
