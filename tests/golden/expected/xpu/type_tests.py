"""Type tests and tensor types written as strings (issue 13, items 6 and 9)."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

model = nn.Linear(2, 2)
# A type test asks the same question on every target: not a use of DataParallel.
if isinstance(model, nn.parallel.DataParallel):
    model = model.module
if isinstance(model, (nn.DataParallel, DistributedDataParallel)):
    model = model.module
if type(model) is nn.DataParallel:
    model = model.module
is_parallel = type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)  # YOLOX, yolov5
wrappers = [nn.DataParallel]  # a list that is not a type test: still a use
wrapped = nn.DataParallel(model)  # a use: reported where the target needs DDP

x = torch.zeros(2)
y = x.type("torch.cuda.FloatTensor")
z = x.type(torch.cuda.HalfTensor)
torch.set_default_tensor_type("torch.cuda.FloatTensor")
ids = torch.cuda.LongTensor([1, 2])
on_device = isinstance(x, torch.cuda.FloatTensor)
same_type = x.type() == "torch.cuda.FloatTensor"
label = "torch.cuda.FloatTensor is a legacy type"  # prose, not a type name
