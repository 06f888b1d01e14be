import torch
import torch_npu  # noqa: F401
d = 'npu' if ok else 'cpu'
x = torch.ones(1).npu()
