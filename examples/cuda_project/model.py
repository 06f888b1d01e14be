"""Model definition; note the user identifiers that mention cuda and nccl (never renamed)."""
import torch
import torch.nn as nn


def configure_nccl(num_gpus_per_machine=1):
    """Set NCCL options (a user function: its name must survive conversion)."""
    return {"NCCL_DEBUG": "WARN", "gpus": num_gpus_per_machine}


class TinyNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc1 = nn.Linear(4, 16)
        self.fc2 = nn.Linear(16, 1)

    def forward(self, x):
        if x.is_cuda:  # the barracuda check
            x = x * 1.0
        return self.fc2(torch.relu(self.fc1(x)))


def init_weights(model, device="cuda"):
    for p in model.parameters():
        nn.init.normal_(p, std=0.1)
    return model
