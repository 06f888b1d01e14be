import argparse
import os

import torch

DEFAULT_DEVICE = "cuda"


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="cuda", choices=["cuda", "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="cuda:0", *, map_location="cuda"):
    dev = torch.device("cuda", rank)
    dev2 = torch.device("cuda:{}".format(rank))
    dev3 = torch.device(type="cuda", index=rank)
    loc = "cuda:{}".format(rank)
    loc2 = f"cuda:{rank}"
    loc3 = "cuda:%d" % rank
    choice = "cuda" if torch.cuda.is_available() else "cpu"
    ckpt = torch.load(path, map_location="cuda:0")
    ckpt2 = torch.load(path, map_location={"cuda:1": "cuda:0"})
    x = torch.zeros(3, device="cuda").to("cuda:1")
    y = x.to(device="cuda", non_blocking=True)
    torch.set_default_device("cuda")
    g = torch.Generator(device="cuda")
    cfg = {"device": "cuda", "name": "cuda"}
    if x.device.type == "cuda" or "cuda" in str(dev):
        pass
    if dev.type in ("cuda", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", "cuda"])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param("cuda", marks=pytest.mark.skipif(not torch.cuda.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == "cuda" and not torch.cuda.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", "cuda", marks=pytest.mark.skipif(torch.cuda.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", "cuda"), default="cuda")
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
