import torch


def check(use_cuda_kernel, n_gpus):
    assert not (use_cuda_kernel and not torch.accelerator.is_available()), "the CUDA kernel needs a GPU"
    assert torch.accelerator.is_available() or not use_cuda_kernel
    assert not torch.accelerator.is_available() or n_gpus > 0
    pass
