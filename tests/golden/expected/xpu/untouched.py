"""Module docstring: call torch.cuda.synchronize() and x.cuda() before "cuda:0" timing."""
import logging

logger = logging.getLogger(__name__)


def configure_nccl(num_gpus_per_machine, gpu_mem_usage, cuda_device):
    # CUDA: set nccl options for torch.cuda devices
    logger.info("using cuda with nccl on %d gpus", num_gpus_per_machine)
    logger.info("CUDA out of memory. Try a smaller batch on cuda:0")
    msg = "barracuda cudart nccl_wrapper"
    url = "https://github.com/NVIDIA/nccl"
    path = "/usr/local/cuda/lib64"
    input_cuda = cuda_device + gpu_mem_usage
    return msg, url, path, input_cuda
