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
