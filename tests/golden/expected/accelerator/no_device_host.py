"""Device-agnostic output must run on a host without an accelerator (executed on the accelerator target by
tests/test_examples.py): module-level defaults, memory statistics, synchronize, empty_cache."""
import argparse

import torch

parser = argparse.ArgumentParser()
parser.add_argument("--dist-backend", default=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")))
parser.add_argument("--device", default=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)


def main(argv, rank=0):
    args = parser.parse_args(argv)
    if torch.accelerator.is_available(): torch.accelerator.set_device_index(rank)
    device = torch.device(args.device if torch.accelerator.is_available() else "cpu")
    x = torch.ones(4, device=device)
    if torch.accelerator.is_available(): torch.accelerator.synchronize()
    if torch.accelerator.is_available(): torch.accelerator.empty_cache()  # between epochs
    if rank == 0: (torch.accelerator.reset_peak_memory_stats() if torch.accelerator.is_available() else None)
    mem = (torch.accelerator.max_memory_allocated() if torch.accelerator.is_available() else 0) / 2**20
    stats = (torch.accelerator.memory_stats(
        device) if torch.accelerator.is_available() else {})
    if torch.accelerator.is_available():
        torch.accelerator.synchronize()
    return args.dist_backend, float(x.sum()) + mem, len(stats)


if __name__ == "__main__":
    print(main([]))
