import torch
cfg = {'name': 'cuda'}
