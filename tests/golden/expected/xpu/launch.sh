#!/bin/bash
# Use CUDA_VISIBLE_DEVICES to pick gpus (this comment stays)
export ZE_AFFINITY_MASK=0,1,2,3
export NCCL_DEBUG=INFO
echo "visible: $ZE_AFFINITY_MASK ${ZE_AFFINITY_MASK}"
nvidia-smi
ZE_AFFINITY_MASK=0 python train.py --dist-backend xccl --device xpu
python -m torch.distributed.run --nproc_per_node 4 train.py --backend=xccl  # nccl comment
