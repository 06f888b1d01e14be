"""What a "cuda" means (issue 30, classes 1-5): an accelerator name, a part of another name, the question of a
CUDA-only library's branch, a device count used as a process count, DDP's device ids through a dict.
Executed by tests/test_sim.py on the cpu target and the simulated devices: it prints one JSON line."""
import json
import os
import sys

import torch
import torch_npu  # noqa: F401
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

SUPPORTED_ACCELERATORS = ("cpu", "gpu", "cuda", "mps", "tpu", "auto")


class Connector:
    """A registry of accelerator names (Lightning's connector): "cuda" here is a name, never a device."""

    def __init__(self, accelerator="auto"):
        if accelerator not in SUPPORTED_ACCELERATORS:
            raise ValueError(f"unknown accelerator {accelerator!r}")
        self.flag = accelerator
        if self.flag == "auto":
            self.flag = "cuda" if torch.npu.is_available() else "cpu"
        if self.flag == "gpu":
            self.flag = "cuda"

    def kind(self):
        if self.flag in ("cuda", "gpu", "mps"):
            return "accelerated"
        return "plain"


class Trainer:
    """A flag that is both an accelerator name and a device: the group is rewritten together."""

    def __init__(self, accelerator):
        self.flag = accelerator

    def device(self):
        if self.flag in ("npu", "gpu", "mps"):
            return torch.device(self.flag if self.flag != "gpu" else "npu")
        return torch.device("cpu")


def column(use_cuda):
    """A profiler column: the "cuda" builds another name."""
    return f"{'cuda' if use_cuda else 'cpu'}_time_total", "{}_memory_usage".format("cuda" if use_cuda else "cpu")


def providers_for(device):
    """onnxruntime's providers: the CUDA branch asks for CUDA's provider, so its question stays CUDA's."""
    if device.type == "cuda":
        providers = ["CUDAExecutionProvider", "CPUExecutionProvider"]
    elif device.type == "cpu":
        providers = ["CPUExecutionProvider"]
    else:
        raise ValueError("Unsupported device")
    return providers


def providers(device):
    try:
        return providers_for(device)
    except ValueError as e:   # where the project has no provider for the device: as before the migration
        return str(e)


def fused_add(x, y):
    if x.is_cuda:
        import triton  # noqa: F401  (a Triton kernel for CUDA tensors)
        return x + y
    return x + y


def worker(index, count, folder):
    with open(os.path.join(folder, f"worker{index}"), "w") as f:
        f.write(str(count))


def spawn_per_gpu(folder):
    ngpus_per_node = torch.npu.device_count()
    mp.spawn(worker, nprocs=ngpus_per_node, args=(ngpus_per_node, folder))
    return len(os.listdir(folder))


def ddp_through_a_dict(device):
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", os.environ.get("MEANING_PORT", "29561"))
    dist.init_process_group("hccl", rank=0, world_size=1)
    model = torch.nn.Linear(2, 2).to(device)
    kwargs = {"broadcast_buffers": False}
    kwargs["device_ids"] = [0]
    ddp = DistributedDataParallel(model, **kwargs)
    out = ddp(torch.ones(1, 2, device=device)).shape[1]
    dist.destroy_process_group()
    return out


if __name__ == "__main__":
    device = torch.device("npu" if torch.npu.is_available() else "cpu")
    result = {
        "connector": [Connector(name).kind() for name in ("auto", "cuda", "gpu", "cpu")],
        "trainer": Trainer("npu" if torch.npu.is_available() else "cpu").device().type,
        "columns": column(torch.npu.is_available()),
        "providers": providers(device),
        "fused": fused_add(torch.ones(2, device=device), torch.ones(2, device=device)).sum().item(),
        "spawned": spawn_per_gpu(sys.argv[1]) if len(sys.argv) > 1 else None,
        "ddp": ddp_through_a_dict(device),
    }
    print(json.dumps(result))
