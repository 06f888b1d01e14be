# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch
import torch_npu  # noqa: F401


def f(x):
    """Açıklama: İ"""
    return x.npu(), torch.npu.device_count()
