#!/bin/bash
# Use CUDA_VISIBLE_DEVICES to pick gpus (this comment stays)
export CUDA_VISIBLE_DEVICES=0,1,2,3
export NCCL_DEBUG=INFO
echo "visible: $CUDA_VISIBLE_DEVICES ${CUDA_VISIBLE_DEVICES}"
nvidia-smi
CUDA_VISIBLE_DEVICES=0 python train.py --dist-backend gloo --device cpu
python -m torch.distributed.run --nproc_per_node 4 train.py --backend=gloo  # nccl comment
