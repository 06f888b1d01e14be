"""nms, batched_nms and box_iou in plain torch (harness stand-in, see ../__init__.py; nms and box_iou
from ../plain_nms.py)."""
import torch
from plain_nms import box_iou, nms  # noqa: F401

from .misc import FrozenBatchNorm2d  # noqa: F401


def batched_nms(boxes, scores, idxs, iou_threshold):
    if boxes.numel() == 0:
        return torch.empty(0, dtype=torch.long, device=boxes.device)
    offsets = idxs.to(boxes) * (boxes.max() + 1)
    return nms(boxes + offsets[:, None], scores, iou_threshold)
