#!/bin/bash
# Use CUDA_VISIBLE_DEVICES to pick gpus (this comment stays)
export MUSA_VISIBLE_DEVICES=0,1,2,3
export MCCL_DEBUG=INFO
echo "visible: $MUSA_VISIBLE_DEVICES ${MUSA_VISIBLE_DEVICES}"
nvidia-smi
MUSA_VISIBLE_DEVICES=0 python train.py --dist-backend mccl --device musa
python -m torch.distributed.run --nproc_per_node 4 train.py --backend=mccl  # nccl comment
