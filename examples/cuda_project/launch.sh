#!/usr/bin/env bash
# Launch on 2 GPUs; CUDA_VISIBLE_DEVICES in this comment stays as it is.
export CUDA_VISIBLE_DEVICES=0,1
nvidia-smi -L
torchrun --nproc_per_node=2 train.py --dist-backend nccl --amp
