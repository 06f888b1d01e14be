import torch
import torch.multiprocessing as mp
n = 1
mp.spawn(print, nprocs=n)
