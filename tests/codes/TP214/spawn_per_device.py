import torch
import torch.multiprocessing as mp
n = torch.cuda.device_count()
mp.spawn(print, nprocs=n)
