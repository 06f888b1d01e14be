#!/bin/bash
# Use CUDA_VISIBLE_DEVICES to pick gpus (this comment stays)
export MLU_VISIBLE_DEVICES=0,1,2,3
export NCCL_DEBUG=INFO
echo "visible: $MLU_VISIBLE_DEVICES ${MLU_VISIBLE_DEVICES}"
nvidia-smi
MLU_VISIBLE_DEVICES=0 python train.py --dist-backend cncl --device mlu
python -m torch.distributed.run --nproc_per_node 4 train.py --backend=cncl  # nccl comment
