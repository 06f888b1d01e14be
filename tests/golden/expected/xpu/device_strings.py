import argparse
import os

import torch

DEFAULT_DEVICE = "xpu"


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="xpu", choices=["xpu", "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="xpu:0", *, map_location="xpu"):
    dev = torch.device("xpu", rank)
    dev2 = torch.device("xpu:{}".format(rank))
    dev3 = torch.device(type="xpu", index=rank)
    loc = "xpu:{}".format(rank)
    loc2 = f"xpu:{rank}"
    loc3 = "xpu:%d" % rank
    choice = "xpu" if torch.xpu.is_available() else "cpu"
    ckpt = torch.load(path, map_location="xpu:0")
    ckpt2 = torch.load(path, map_location={"cuda:1": "xpu:0"})
    x = torch.zeros(3, device="xpu").to("xpu:1")
    y = x.to(device="xpu", non_blocking=True)
    torch.set_default_device("xpu")
    g = torch.Generator(device="xpu")
    cfg = {"device": "xpu", "name": "cuda"}
    if x.device.type == "xpu" or "xpu" in str(dev):
        pass
    if dev.type in ("cuda", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", "xpu"])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param("xpu", marks=pytest.mark.skipif(not torch.xpu.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == "xpu" and not torch.xpu.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", "xpu", marks=pytest.mark.skipif(torch.xpu.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", "xpu"), default="xpu")
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
