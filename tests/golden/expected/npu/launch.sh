#!/bin/bash
# Use CUDA_VISIBLE_DEVICES to pick gpus (this comment stays)
export ASCEND_RT_VISIBLE_DEVICES=0,1,2,3
export NCCL_DEBUG=INFO
echo "visible: $ASCEND_RT_VISIBLE_DEVICES ${ASCEND_RT_VISIBLE_DEVICES}"
nvidia-smi
ASCEND_RT_VISIBLE_DEVICES=0 python train.py --dist-backend hccl --device npu
python -m torch.distributed.run --nproc_per_node 4 train.py --backend=hccl  # nccl comment
