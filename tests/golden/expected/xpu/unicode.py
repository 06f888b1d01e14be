# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch


def f(x):
    """Açıklama: İ"""
    return x.xpu(), torch.xpu.device_count()
