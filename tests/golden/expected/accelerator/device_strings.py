import argparse
import os

import torch

DEFAULT_DEVICE = (torch.accelerator.current_accelerator() or torch.device("cpu")).type


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default=(torch.accelerator.current_accelerator() or torch.device("cpu")).type, choices=[(torch.accelerator.current_accelerator() or torch.device("cpu")).type, "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="cuda:0", *, map_location="cuda"):
    dev = torch.device((torch.accelerator.current_accelerator() or torch.device("cpu")).type, rank)
    dev2 = torch.device("{}:{}".format((torch.accelerator.current_accelerator() or torch.device("cpu")).type, rank))
    dev3 = torch.device(type=(torch.accelerator.current_accelerator() or torch.device("cpu")).type, index=rank)
    loc = "{}:{}".format((torch.accelerator.current_accelerator() or torch.device("cpu")).type, rank)
    loc2 = f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:{rank}"
    loc3 = f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:%d" % rank
    choice = (torch.accelerator.current_accelerator() or torch.device("cpu")).type if torch.accelerator.is_available() else "cpu"
    ckpt = torch.load(path, map_location=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    ckpt2 = torch.load(path, map_location={"cuda:1": f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:0"})
    x = torch.zeros(3, device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type).to(f"{(torch.accelerator.current_accelerator() or torch.device('cpu')).type}:1")
    y = x.to(device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type, non_blocking=True)
    torch.set_default_device((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    g = torch.Generator(device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)
    cfg = {"device": (torch.accelerator.current_accelerator() or torch.device("cpu")).type, "name": "cuda"}
    if x.device.type == (torch.accelerator.current_accelerator() or torch.device("cpu")).type or (torch.accelerator.current_accelerator() or torch.device("cpu")).type in str(dev):
        pass
    if dev.type in ((torch.accelerator.current_accelerator() or torch.device("cpu")).type, "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", (torch.accelerator.current_accelerator() or torch.device("cpu")).type])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param((torch.accelerator.current_accelerator() or torch.device("cpu")).type, marks=pytest.mark.skipif(not torch.accelerator.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == (torch.accelerator.current_accelerator() or torch.device("cpu")).type and not torch.accelerator.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", (torch.accelerator.current_accelerator() or torch.device("cpu")).type, marks=pytest.mark.skipif(torch.accelerator.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", (torch.accelerator.current_accelerator() or torch.device("cpu")).type), default=(torch.accelerator.current_accelerator() or torch.device("cpu")).type)
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
