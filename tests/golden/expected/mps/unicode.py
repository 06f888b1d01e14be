# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch


def f(x):
    """Açıklama: İ"""
    return x.to("mps"), torch.mps.device_count()
