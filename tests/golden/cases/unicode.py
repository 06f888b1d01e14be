# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch


def f(x):
    """Açıklama: İ"""
    return x.cuda(), torch.cuda.device_count()
