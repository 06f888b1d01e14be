"""Device-agnostic output must run on a host without an accelerator (executed on the accelerator target by
tests/test_examples.py): module-level defaults, memory statistics, synchronize, empty_cache."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="gloo")
parser.add_argument("--device", default="cpu")


def main(argv, rank=0):
    args = parser.parse_args(argv)
    torch.cpu.set_device(rank)
    device = torch.device(args.device if torch.cuda.is_available() else "cpu")
    x = torch.ones(4, device=device)
    torch.cpu.synchronize()
    torch.cuda.empty_cache()  # between epochs
    if rank == 0: (torch.cuda.reset_peak_memory_stats() if torch.cuda.is_available() else None)
    mem = (torch.cuda.max_memory_allocated() if torch.cuda.is_available() else 0) / 2**20
    stats = (torch.cuda.memory_stats(
        device) if torch.cuda.is_available() else {})
    if torch.cuda.is_available():
        torch.cpu.synchronize()
    return args.dist_backend, float(x.sum()) + mem, len(stats)


if __name__ == "__main__":
    print(main([]))
