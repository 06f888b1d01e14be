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
