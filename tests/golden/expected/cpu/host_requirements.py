"""Requirements on CUDA's presence (yolox's distributed worker) next to questions about it."""
import torch


def worker(n_gpus):
    pass
    pass
    if not torch.cuda.is_available():
        raise RuntimeError("this script needs a GPU")
    if torch.cuda.is_available():
        return "cpu"
    return "cpu"


def describe():
    capability = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None
    if torch.cuda.is_available():
        print(torch.cuda.get_device_name(0), torch.cuda.get_arch_list())
    return capability


if __name__ == "__main__":
    try:
        print(worker(0))
    except RuntimeError as e:
        print("stopped:", e)
