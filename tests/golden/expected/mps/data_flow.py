"""Device and backend strings that reach a device through local data flow (issue 13, class 1 and 2)."""
import os

import torch
import torch.distributed as dist


def select_device(device=""):
    """ultralytics: the prefix is stripped through a loop variable; the guard picks the device."""
    if isinstance(device, torch.device):
        if device.type == "mps" and device.index is None:
            return ""
    device = str(device).lower()
    for remove in "mps:", "none", "(", ")", " ":
        device = device.replace(remove, "")
    if device == "mps":
        device = "0"
    cpu = device == "cpu"
    if not cpu and torch.cuda.is_available():
        devices = device.split(",") if device else [str(torch.cuda.current_device())]
        arg = f"mps:{devices[0]}"
    else:
        arg = "cpu"
    return torch.device(arg)


def yolov5_select(device=""):
    cuda = device != "cpu" and torch.mps.is_available()
    if cuda:
        arg = 'mps:0'
    else:
        arg = 'cpu'
    return torch.device(arg)


def rank_device(rank):
    return torch.device("mps:" + str(rank))


def all_devices():
    names = ["cpu"] + (["mps"] if torch.mps.is_available() else [])
    return [torch.device(n) for n in names]


def is_gpu(device):
    return str(device).startswith("mps") or device.split(":")[0] == "mps"


def setup_ddp(device_type, rank, world):
    dist.init_process_group(backend={"npu": "hccl"}.get(device_type, "gloo" if dist.is_backend_available("gloo") else "gloo"),
                            rank=rank, world_size=world)


def detectron2_launch(world):
    dist.init_process_group(backend="gloo", world_size=world)


def try_backends():
    chosen = "gloo"
    for name in ("gloo", "gloo"):
        if dist.is_backend_available(name):
            chosen = name
    dist.init_process_group(chosen)


def host_queries(x):
    """On the host target these keep asking about CUDA: the CPU answers no."""
    if torch.mps.is_available() and torch.mps.device_count() > 1 and x.is_mps:
        return "multi"
    assert x.is_mps, "needs a GPU tensor"
    return os.environ.get("RANK", "0")


def wrap(model, rank):
    """DistributedDataParallel device ids: a CPU module takes none (cpu; accelerator where there is none)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model, device_ids=[rank], output_device=rank, find_unused_parameters=True), DDP(model, [rank])


def lookups(args, cfg):
    """Defaults of lookups by a device-named key (timm: getattr(args, 'device', 'cuda'))."""
    return getattr(args, "device", "mps"), cfg.get("device", "mps:0"), os.environ.get("DEVICE", "mps")


def retry_on_oom(step):
    """Recovery keyed on CUDA's out-of-memory wording (yolox, detectron2)."""
    try:
        return step()
    except RuntimeError as e:
        if "out of memory. " not in str(e):
            raise
        return None


def backend_for(device):
    """A map by device type, looked up through a name (timm's init_distributed_device)."""
    device_type, *device_idx = device.split(":", maxsplit=1)
    dist_backends = {
        "xpu": "ccl",
        "mps": "gloo",
        "npu": "hccl",
    }
    dist_backend = dist_backends.get(device_type, "gloo")
    dist.init_process_group(backend=dist_backend)
