import argparse
import os

import torch
import torch_npu  # noqa: F401

DEFAULT_DEVICE = "npu"


def parse():
    p = argparse.ArgumentParser()
    p.add_argument("--device", default="npu", choices=["npu", "cpu"], help="use cuda or cpu")
    return p.parse_args()


def load(path, rank, device="npu:0", *, map_location="npu"):
    dev = torch.device("npu", rank)
    dev2 = torch.device("npu:{}".format(rank))
    dev3 = torch.device(type="npu", index=rank)
    loc = "npu:{}".format(rank)
    loc2 = f"npu:{rank}"
    loc3 = "npu:%d" % rank
    choice = "npu" if torch.npu.is_available() else "cpu"
    ckpt = torch.load(path, map_location="npu:0")
    ckpt2 = torch.load(path, map_location={"cuda:1": "npu:0"})
    x = torch.zeros(3, device="npu").to("npu:1")
    y = x.to(device="npu", non_blocking=True)
    torch.set_default_device("npu")
    g = torch.Generator(device="npu")
    cfg = {"device": "npu", "name": "cuda"}
    if x.device.type == "npu" or "npu" in str(dev):
        pass
    if dev.type in ("npu", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names


# Device choices: a "cuda" beside another device's string in a list, tuple or set is a device; a pytest.param
# whose marks ask for CUDA is one; so is "cuda" compared beside that question (timm's tests).
import pytest


@pytest.mark.parametrize("device", ["cpu", "npu"])
def test_each(device):
    return torch.ones(1).to(device)


@pytest.fixture(params=["cpu", pytest.param("npu", marks=pytest.mark.skipif(not torch.npu.is_available(), reason="CUDA"))])
def each_device(request):
    if request.param == "npu" and not torch.npu.is_available():
        pytest.skip("CUDA unavailable")
    return request.param


PAIR = pytest.param("hfds", "npu", marks=pytest.mark.skipif(torch.npu.device_count() < 1, reason="GPU"))
CLI = argparse.ArgumentParser()
CLI.add_argument("--accel", choices=("cpu", "mps", "npu"), default="npu")
CLI.add_argument("--dist", choices=["cuda", "nccl"])  # no other device: for review, as before
LABELS = {"cuda", "other"}  # the same
FILES = ["cuda", "cpu.txt"]  # the same
FOLDERS = [os.path.join("csrc", sub) for sub in ("cpu", "cuda")]  # folder names: the same
