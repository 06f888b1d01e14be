# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch
import torch_musa  # noqa: F401


def f(x):
    """Açıklama: İ"""
    return x.musa(), torch.musa.device_count()
