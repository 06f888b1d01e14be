import torch
pass
