"""A small CUDA training script, written the way many real projects are.

Converted by `torchport convert examples/cuda_project --to <target>`; the cpu
conversion runs on any machine (tests/test_examples.py does exactly that).
"""
from __future__ import annotations

import argparse
import os

import torch
import torch.distributed as dist
import torch.nn as nn
from torch.cuda.amp import GradScaler, autocast
from torch.nn.parallel import DistributedDataParallel as DDP

from model import TinyNet, init_weights


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description="train a tiny net on cuda")
    parser.add_argument("--dist-backend", default="nccl", type=str, help="distributed backend (nccl)")
    parser.add_argument("--device", default="cuda", help="cuda device")
    parser.add_argument("--steps", default=3, type=int)
    parser.add_argument("--amp", action="store_true")
    parser.add_argument("--save", default="", help="checkpoint path")
    return parser.parse_args(argv)


def setup(args):
    local_rank = int(os.environ.get("LOCAL_RANK", 0))
    if "WORLD_SIZE" in os.environ:
        dist.init_process_group(backend=args.dist_backend)
        torch.cuda.set_device(local_rank)
    print("visible:", os.environ.get("CUDA_VISIBLE_DEVICES", "all"))
    return "cuda:{}".format(local_rank) if torch.cuda.is_available() else "cpu"


def main(argv=None):
    args = parse_args(argv)
    torch.manual_seed(0)
    torch.cuda.manual_seed_all(0)
    torch.backends.cudnn.benchmark = True
    device = setup(args)
    model = TinyNet().cuda()
    init_weights(model)
    if dist.is_initialized():
        model = DDP(model, device_ids=[int(os.environ.get("LOCAL_RANK", 0))])
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    scaler = GradScaler(enabled=args.amp)
    loss_fn = nn.MSELoss()
    for step in range(args.steps):
        x = torch.randn(8, 4).cuda(non_blocking=True)
        y = torch.randn(8, 1, device="cuda")
        with autocast(enabled=args.amp):
            loss = loss_fn(model(x), y)
        opt.zero_grad()
        scaler.scale(loss).backward()
        scaler.step(opt)
        scaler.update()
        torch.cuda.synchronize()
        print(f"step {step} loss {loss.item():.8f} on {x.device.type}")
    if args.save:
        torch.save(model.state_dict(), args.save)
        state = torch.load(args.save, map_location="cuda:0")
        print("reloaded", len(state), "tensors; peak memory", torch.cuda.max_memory_allocated())
    if dist.is_initialized() and dist.get_backend() == "nccl":
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
