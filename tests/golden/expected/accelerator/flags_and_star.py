import argparse

import torch
from torch.cuda import *

parser = argparse.ArgumentParser()
parser.add_argument("--no-cuda", action="store_true", help="disables CUDA training")
args = parser.parse_args()
args.cuda = not args.no_cuda and torch.accelerator.is_available()
kwargs = {"num_workers": 1, "pin_memory": True} if args.cuda else {}
if args.cuda:
    model = torch.nn.Linear(2, 2).to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
