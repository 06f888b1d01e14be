import argparse
import os

import torch
import torch.distributed as dist
from torch.distributed import init_process_group


def parse():
    parser = argparse.ArgumentParser()
    parser.add_argument("--dist-backend", default="gloo", type=str, help="nccl or gloo")
    parser.add_argument("--backend", type=str, choices=["gloo", "gloo"], default="gloo")
    return parser.parse_args()


def setup(rank, world, backend="gloo"):
    os.environ["NCCL_DEBUG"] = "INFO"
    os.environ.setdefault("TORCH_NCCL_BLOCKING_WAIT", "1")
    dist.init_process_group("gloo", rank=rank, world_size=world)
    init_process_group(backend="gloo", init_method="env://")
    dist.init_process_group(backend="cpu:gloo,mps:gloo")
    group = dist.new_group(ranks=[0, 1], backend="gloo")
    assert backend in ["gloo", "nccl"]
    if dist.get_backend() == "nccl":
        dist.barrier()
    available = dist.is_backend_available("gloo")
    kind = "gloo"
    return group, available, kind, torch.cuda.nccl.version()
