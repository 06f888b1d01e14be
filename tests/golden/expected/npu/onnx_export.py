"""ONNX export is a CPU flow (Ascend's guide, 模型保存与转换): what torch.onnx.export gets stays on the CPU (TP212)."""
import torch
import torch_npu  # noqa: F401
import torch.onnx
from torch.onnx import export as to_onnx

import models

device = torch.device("npu" if torch.npu.is_available() else "cpu")


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
    model.load_state_dict(torch.load(path, map_location="cpu"))
    model.cpu()
    model.eval()
    dummy_input = torch.randn(1, 3, 224, 224, device="cpu")
    mask = torch.ones(1, 224).to('cpu').bool()
    torch.onnx.export(model, (dummy_input, mask), "m.onnx", opset_version=11)


def aliased():
    net = models.mobilenet_v2().cpu().eval()  # .cuda(0): the index goes too
    to_onnx(net, torch.zeros(1, 3, 224, 224).to(torch.device("cpu")), "n.onnx")


def dynamo():
    net = models.mobilenet_v2().eval()
    torch.onnx.dynamo_export(net.cpu(), torch.rand(2, 3, 32, 32).cpu())


def by_variable():
    net = models.mobilenet_v2().to(device)
    x = torch.randn(1, 3, 224, 224).npu()
    torch.onnx.export(net, x, "v.onnx")   # reported: the device variable may be the training device


def train(net, loader):
    net.npu()
    for images, labels in loader:
        loss = net(images.npu()).sum()
        loss.backward()
