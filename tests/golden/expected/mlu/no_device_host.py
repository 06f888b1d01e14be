"""Device-agnostic output must run on a host without an accelerator (executed on the accelerator target by
tests/test_examples.py): module-level defaults, memory statistics, synchronize, empty_cache."""
import argparse

import torch
import torch_mlu  # noqa: F401

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default="cncl")
parser.add_argument("--device", default="mlu")


def main(argv, rank=0):
    args = parser.parse_args(argv)
    torch.mlu.set_device(rank)
    device = torch.device(args.device if torch.mlu.is_available() else "cpu")
    x = torch.ones(4, device=device)
    torch.mlu.synchronize()
    torch.mlu.empty_cache()  # between epochs
    if rank == 0: torch.mlu.reset_peak_memory_stats()
    mem = torch.mlu.max_memory_allocated() / 2**20
    stats = torch.mlu.memory_stats(
        device)
    if torch.mlu.is_available():
        torch.mlu.synchronize()
    return args.dist_backend, float(x.sum()) + mem, len(stats)


if __name__ == "__main__":
    print(main([]))
