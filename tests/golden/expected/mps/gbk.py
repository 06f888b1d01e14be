# -*- coding: gbk -*-
"""中文说明: cuda."""
import torch


def f(x):
    # 注释 cuda
    return x.to("mps"), "设备"
