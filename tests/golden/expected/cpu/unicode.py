# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch


def f(x):
    """Açıklama: İ"""
    return x.to("cpu"), torch.cuda.device_count()
