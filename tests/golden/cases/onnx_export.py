"""ONNX export is a CPU flow (Ascend's guide, 模型保存与转换): what torch.onnx.export gets stays on the CPU (TP212)."""
import torch
import torch.onnx
from torch.onnx import export as to_onnx

import models

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


def guide_flow(path):
    # the guide's own script: already on the CPU, nothing to change
    model = models.resnet50()
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model.eval()
    dummy_input = torch.randn(1, 3, 224, 224)
    torch.onnx.export(model, dummy_input, "resnet50.onnx", input_names=["input"], output_names=["output"],
                      opset_version=11, dynamic_axes={"input": {0: "batch_size"}, "output": {0: "batch_size"}})


def literal_cuda(path):
    model = models.resnet50()
    model.load_state_dict(torch.load(path))
    model.cuda()
    model.eval()
    dummy_input = torch.randn(1, 3, 224, 224, device="cuda")
    mask = torch.ones(1, 224).to('cuda:0').bool()
    torch.onnx.export(model, (dummy_input, mask), "m.onnx", opset_version=11)


def aliased():
    net = models.mobilenet_v2().cuda(0).eval()  # .cuda(0): the index goes too
    to_onnx(net, torch.zeros(1, 3, 224, 224).to(torch.device("cuda")), "n.onnx")


def dynamo():
    net = models.mobilenet_v2().eval()
    torch.onnx.dynamo_export(net.cuda(), torch.rand(2, 3, 32, 32).cuda(non_blocking=True))


def by_variable():
    net = models.mobilenet_v2().to(device)
    x = torch.randn(1, 3, 224, 224).cuda()
    torch.onnx.export(net, x, "v.onnx")   # reported: the device variable may be the training device


def train(net, loader):
    net.cuda()
    for images, labels in loader:
        loss = net(images.cuda()).sum()
        loss.backward()
