import torch
move = x.cuda
