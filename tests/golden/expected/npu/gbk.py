# -*- coding: gbk -*-
"""中文说明: cuda."""
import torch
import torch_npu  # noqa: F401


def f(x):
    # 注释 cuda
    return x.npu(), "设备"
