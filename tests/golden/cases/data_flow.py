"""Device and backend strings that reach a device through local data flow (issue 13, class 1 and 2)."""
import os

import torch
import torch.distributed as dist


def select_device(device=""):
    """ultralytics: the prefix is stripped through a loop variable; the guard picks the device."""
    if isinstance(device, torch.device):
        if device.type == "cuda" and device.index is None:
            return ""
    device = str(device).lower()
    for remove in "cuda:", "none", "(", ")", " ":
        device = device.replace(remove, "")
    if device == "cuda":
        device = "0"
    cpu = device == "cpu"
    if not cpu and torch.cuda.is_available():
        devices = device.split(",") if device else [str(torch.cuda.current_device())]
        arg = f"cuda:{devices[0]}"
    else:
        arg = "cpu"
    return torch.device(arg)


def yolov5_select(device=""):
    cuda = device != "cpu" and torch.cuda.is_available()
    if cuda:
        arg = 'cuda:0'
    else:
        arg = 'cpu'
    return torch.device(arg)


def rank_device(rank):
    return torch.device("cuda:" + str(rank))


def all_devices():
    names = ["cpu"] + (["cuda"] if torch.cuda.is_available() else [])
    return [torch.device(n) for n in names]


def is_gpu(device):
    return str(device).startswith("cuda") or device.split(":")[0] == "cuda"


def setup_ddp(device_type, rank, world):
    dist.init_process_group(backend={"npu": "hccl"}.get(device_type, "nccl" if dist.is_nccl_available() else "gloo"),
                            rank=rank, world_size=world)


def detectron2_launch(world):
    dist.init_process_group(backend="NCCL", world_size=world)


def try_backends():
    chosen = "nccl"
    for name in ("nccl", "gloo"):
        if dist.is_backend_available(name):
            chosen = name
    dist.init_process_group(chosen)


def host_queries(x):
    """On the host target these keep asking about CUDA: the CPU answers no."""
    if torch.cuda.is_available() and torch.cuda.device_count() > 1 and x.is_cuda:
        return "multi"
    assert x.is_cuda, "needs a GPU tensor"
    return os.environ.get("RANK", "0")


def wrap(model, rank):
    """DistributedDataParallel device ids: a CPU module takes none (cpu; accelerator where there is none)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model, device_ids=[rank], output_device=rank, find_unused_parameters=True), DDP(model, [rank])


def lookups(args, cfg):
    """Defaults of lookups by a device-named key (timm: getattr(args, 'device', 'cuda'))."""
    return getattr(args, "device", "cuda"), cfg.get("device", "cuda:0"), os.environ.get("DEVICE", "cuda")


def retry_on_oom(step):
    """Recovery keyed on CUDA's out-of-memory wording (yolox, detectron2)."""
    try:
        return step()
    except RuntimeError as e:
        if "CUDA out of memory. " not in str(e):
            raise
        return None


def backend_for(device):
    """A map by device type, looked up through a name (timm's init_distributed_device)."""
    device_type, *device_idx = device.split(":", maxsplit=1)
    dist_backends = {
        "xpu": "ccl",
        "cuda": "nccl",
        "npu": "hccl",
    }
    dist_backend = dist_backends.get(device_type, "gloo")
    dist.init_process_group(backend=dist_backend)
