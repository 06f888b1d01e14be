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
    if dev.type in ("xpu", "xpu"):
        pass
    print("running on cuda:0", "barracuda", "https://example.com/cuda/", os.path.join("cuda", "x"))
    names = ["cuda", "cuda:1"]
    return dev, dev2, dev3, loc, loc2, loc3, choice, ckpt, ckpt2, y, g, cfg, names
