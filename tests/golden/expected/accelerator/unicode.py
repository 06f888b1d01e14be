# İstanbul ekibi: İİİ CUDA notları (characters whose lowercase is longer)
import torch


def f(x):
    """Açıklama: İ"""
    return x.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type), torch.accelerator.device_count()
