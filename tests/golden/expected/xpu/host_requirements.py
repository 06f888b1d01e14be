"""Requirements on CUDA's presence (yolox's distributed worker) next to questions about it."""
import torch


def worker(n_gpus):
    assert torch.xpu.is_available(), "cuda is not available. Please check your installation."
    assert n_gpus <= torch.xpu.device_count()
    if not torch.xpu.is_available():
        raise RuntimeError("this script needs a GPU")
    if torch.xpu.is_available():
        return "xpu"
    return "cpu"


def describe():
    capability = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None
    if torch.xpu.is_available():
        print(torch.xpu.get_device_name(0), torch.xpu.get_arch_list())
    return capability


if __name__ == "__main__":
    try:
        print(worker(0))
    except RuntimeError as e:
        print("stopped:", e)
