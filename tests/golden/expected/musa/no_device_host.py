"""Device-agnostic output must run on a host without an accelerator (executed on the accelerator target by
tests/test_examples.py): module-level defaults, memory statistics, synchronize, empty_cache."""
import argparse

import torch
import torch_musa  # noqa: F401

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="mccl")
parser.add_argument("--device", default="musa")


def main(argv, rank=0):
    args = parser.parse_args(argv)
    torch.musa.set_device(rank)
    device = torch.device(args.device if torch.musa.is_available() else "cpu")
    x = torch.ones(4, device=device)
    torch.musa.synchronize()
    torch.musa.empty_cache()  # between epochs
    if rank == 0: torch.musa.reset_peak_memory_stats()
    mem = torch.musa.max_memory_allocated() / 2**20
    stats = torch.musa.memory_stats(
        device)
    if torch.musa.is_available():
        torch.musa.synchronize()
    return args.dist_backend, float(x.sum()) + mem, len(stats)


if __name__ == "__main__":
    print(main([]))
