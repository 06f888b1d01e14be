import argparse
import os

import torch

DEFAULT_DEVICE = "mps"


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="mps", choices=["mps", "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="mps:0", *, map_location="mps"):
    dev = torch.device("mps", rank)
    dev2 = torch.device("mps:{}".format(rank))
    dev3 = torch.device(type="mps", index=rank)
    loc = "mps:{}".format(rank)
    loc2 = f"mps:{rank}"
    loc3 = "mps:%d" % rank
    choice = "mps" if torch.mps.is_available() else "cpu"
    ckpt = torch.load(path, map_location="mps:0")
    ckpt2 = torch.load(path, map_location={"cuda:1": "mps:0"})
    x = torch.zeros(3, device="mps").to("mps:1")
    y = x.to(device="mps", non_blocking=True)
    torch.set_default_device("mps")
    g = torch.Generator(device="mps")
    cfg = {"device": "mps", "name": "cuda"}
    if x.device.type == "mps" or "mps" in str(dev):
        pass
    if dev.type in ("mps", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", "mps"])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param("mps", marks=pytest.mark.skipif(not torch.mps.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == "mps" and not torch.mps.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", "mps", marks=pytest.mark.skipif(torch.mps.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", "cuda"), default="cuda")
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
