import torch
d = 'npu' if ok else 'cpu'
x = torch.ones(1).cuda()
