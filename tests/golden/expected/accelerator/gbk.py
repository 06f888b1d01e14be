# -*- coding: gbk -*-
"""中文说明: cuda."""
import torch


def f(x):
    # 注释 cuda
    return x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type), "设备"
