import torch
if torch.cuda.is_available():
    print(torch.cuda.get_arch_list())
