"""Harness for bench/corpus_sim (never shipped), on PYTHONPATH for the projects that import the real
torchvision, so it applies in every process they start (torchrun workers, ultralytics' DDP command).
PyPI's torchvision (installed with --no-deps) is a CUDA build whose C ops do not load against this
machine's CPU torch.  Its Python side imports once the op schemas it registers fakes for exist; nms gets
a plain-torch kernel (../shims/plain_nms.py) and torchvision.ops.nms is let through to it."""
import os
import sys

if os.environ.get("CORPUS_SIM_HARNESS") == "torchvision":
    import torch

    _ops = torch.library.Library("torchvision", "DEF")
    _ops.define("nms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    _ops.define("qnms(Tensor dets, Tensor scores, float iou_threshold) -> Tensor")
    sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "shims"))
    from plain_nms import nms

    _ops.impl("nms", nms, "CompositeExplicitAutograd")
    import torchvision.extension

    torchvision.extension._has_ops = lambda: True
