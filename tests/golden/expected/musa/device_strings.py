import argparse
import os

import torch
import torch_musa  # noqa: F401

DEFAULT_DEVICE = "musa"


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="musa", choices=["musa", "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="musa:0", *, map_location="musa"):
    dev = torch.device("musa", rank)
    dev2 = torch.device("musa:{}".format(rank))
    dev3 = torch.device(type="musa", index=rank)
    loc = "musa:{}".format(rank)
    loc2 = f"musa:{rank}"
    loc3 = "musa:%d" % rank
    choice = "musa" if torch.musa.is_available() else "cpu"
    ckpt = torch.load(path, map_location="musa:0")
    ckpt2 = torch.load(path, map_location={"cuda:1": "musa:0"})
    x = torch.zeros(3, device="musa").to("musa:1")
    y = x.to(device="musa", non_blocking=True)
    torch.set_default_device("musa")
    g = torch.Generator(device="musa")
    cfg = {"device": "musa", "name": "cuda"}
    if x.device.type == "musa" or "musa" in str(dev):
        pass
    if dev.type in ("musa", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", "musa"])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param("musa", marks=pytest.mark.skipif(not torch.musa.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == "musa" and not torch.musa.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", "musa", marks=pytest.mark.skipif(torch.musa.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", "musa"), default="musa")
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
