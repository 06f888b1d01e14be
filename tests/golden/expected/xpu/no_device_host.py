"""Device-agnostic output must run on a host without an accelerator (executed on the accelerator target by
tests/test_examples.py): module-level defaults, memory statistics, synchronize, empty_cache."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="xccl")
parser.add_argument("--device", default="xpu")


def main(argv, rank=0):
    args = parser.parse_args(argv)
    torch.xpu.set_device(rank)
    device = torch.device(args.device if torch.xpu.is_available() else "cpu")
    x = torch.ones(4, device=device)
    torch.xpu.synchronize()
    torch.xpu.empty_cache()  # between epochs
    if rank == 0: torch.xpu.reset_peak_memory_stats()
    mem = torch.xpu.max_memory_allocated() / 2**20
    stats = torch.xpu.memory_stats(
        device)
    if torch.xpu.is_available():
        torch.xpu.synchronize()
    return args.dist_backend, float(x.sum()) + mem, len(stats)


if __name__ == "__main__":
    print(main([]))
