import torch
print('set CUDA_VISIBLE_DEVICES first')
