#!/usr/bin/env python
# -*- coding: utf-8 -*-
"""Training entry point.

Example:
    import torch
    model.cuda()
"""
from __future__ import annotations

import os
import sys

import numpy as np
import torch

HELP = "run: python -c 'import torch; print(torch.cuda.is_available())'"


def main():
    print(HELP, np.zeros(1), os.getcwd(), sys.argv)
    return torch.zeros(2).to((torch.accelerator.current_accelerator() or torch.device("cpu")).type)
