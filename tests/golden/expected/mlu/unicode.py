# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch
import torch_mlu  # noqa: F401


def f(x):
    """Açıklama: İ"""
    return x.mlu(), torch.mlu.device_count()
