"""Device and backend strings that reach a device through local data flow (issue 13, class 1 and 2)."""
import os

import torch
import torch.distributed as dist


def select_device(device=""):
    """ultralytics: the prefix is stripped through a loop variable; the guard picks the device."""
    if isinstance(device, torch.device):
        if device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type and device.index is None:
            return ""
    device = str(device).lower()
    for remove in f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:", "none", "(", ")", " ":
        device = device.replace(remove, "")
    if device == (torch.accelerator.current_accelerator() or torch.device("cpu")).type:
        device = "0"
    cpu = device == "cpu"
    if not cpu and torch.accelerator.is_available():
        devices = device.split(",") if device else [str(torch.accelerator.current_device_index())]
        arg = f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:{devices[0]}"
    else:
        arg = "cpu"
    return torch.device(arg)


def yolov5_select(device=""):
    cuda = device != "cpu" and torch.accelerator.is_available()
    if cuda:
        arg = f'{(torch.accelerator.current_accelerator() or torch.device("cpu")).type}:0'
    else:
        arg = 'cpu'
    return torch.device(arg)


def rank_device(rank):
    return torch.device(f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:" + str(rank))


def all_devices():
    names = ["cpu"] + ([(torch.accelerator.current_accelerator() or torch.device("cpu")).type] if torch.accelerator.is_available() else [])
    return [torch.device(n) for n in names]


def is_gpu(device):
    return str(device).startswith((torch.accelerator.current_accelerator() or torch.device("cpu")).type) or device.split(":")[0] == (torch.accelerator.current_accelerator() or torch.device("cpu")).type


def setup_ddp(device_type, rank, world):
    dist.init_process_group(backend={"npu": "hccl"}.get(device_type, torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")) if dist.is_backend_available(torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu"))) else "gloo"),
                            rank=rank, world_size=world)


def detectron2_launch(world):
    dist.init_process_group(backend=torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")), world_size=world)


def try_backends():
    chosen = torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu"))
    for name in (torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")), "gloo"):
        if dist.is_backend_available(name):
            chosen = name
    dist.init_process_group(chosen)


def host_queries(x):
    """On the host target these keep asking about CUDA: the CPU answers no."""
    if torch.accelerator.is_available() and torch.accelerator.device_count() > 1 and (x.device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type):
        return "multi"
    assert (x.device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type), "needs a GPU tensor"
    return os.environ.get("RANK", "0")


def wrap(model, rank):
    """DistributedDataParallel device ids: a CPU module takes none (cpu; accelerator where there is none)."""
    from torch.nn.parallel import DistributedDataParallel as DDP
    return DDP(model, device_ids=([rank] if torch.accelerator.is_available() else None), output_device=(rank if torch.accelerator.is_available() else None), find_unused_parameters=True), DDP(model, ([rank] if torch.accelerator.is_available() else None))


def lookups(args, cfg):
    """Defaults of lookups by a device-named key (timm: getattr(args, 'device', 'cuda'))."""
    return getattr(args, "device", (torch.accelerator.current_accelerator() or torch.device("cpu")).type), cfg.get("device", f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:0"), os.environ.get("DEVICE", (torch.accelerator.current_accelerator() or torch.device("cpu")).type)


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
        (torch.accelerator.current_accelerator() or torch.device("cpu")).type: torch.distributed.get_default_backend_for_device(torch.accelerator.current_accelerator() or torch.device("cpu")),
        "npu": "hccl",
    }
    dist_backend = dist_backends.get(device_type, "gloo")
    dist.init_process_group(backend=dist_backend)
