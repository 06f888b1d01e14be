import argparse
import os

import torch
import torch_mlu  # noqa: F401

DEFAULT_DEVICE = "mlu"


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="mlu", choices=["mlu", "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="mlu:0", *, map_location="mlu"):
    dev = torch.device("mlu", rank)
    dev2 = torch.device("mlu:{}".format(rank))
    dev3 = torch.device(type="mlu", index=rank)
    loc = "mlu:{}".format(rank)
    loc2 = f"mlu:{rank}"
    loc3 = "mlu:%d" % rank
    choice = "mlu" if torch.mlu.is_available() else "cpu"
    ckpt = torch.load(path, map_location="mlu:0")
    ckpt2 = torch.load(path, map_location={"cuda:1": "mlu:0"})
    x = torch.zeros(3, device="mlu").to("mlu:1")
    y = x.to(device="mlu", non_blocking=True)
    torch.set_default_device("mlu")
    g = torch.Generator(device="mlu")
    cfg = {"device": "mlu", "name": "cuda"}
    if x.device.type == "mlu" or "mlu" in str(dev):
        pass
    if dev.type in ("mlu", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", "mlu"])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param("mlu", marks=pytest.mark.skipif(not torch.mlu.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == "mlu" and not torch.mlu.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", "mlu", marks=pytest.mark.skipif(torch.mlu.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", "mlu"), default="mlu")
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
