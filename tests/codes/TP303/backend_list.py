import torch
BACKENDS = ['nccl', 'gloo']
