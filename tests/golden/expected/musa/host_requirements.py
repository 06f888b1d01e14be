"""Requirements on CUDA's presence (yolox's distributed worker) next to questions about it."""
import torch
import torch_musa  # noqa: F401


def worker(n_gpus):
    assert torch.musa.is_available(), "cuda is not available. Please check your installation."
    assert n_gpus <= torch.musa.device_count()
    if not torch.musa.is_available():
        raise RuntimeError("this script needs a GPU")
    if torch.musa.is_available():
        return "musa"
    return "cpu"


def describe():
    capability = torch.cuda.get_device_capability(0) if torch.cuda.is_available() else None
    if torch.musa.is_available():
        print(torch.musa.get_device_name(0), torch.musa.get_arch_list())
    return capability


if __name__ == "__main__":
    try:
        print(worker(0))
    except RuntimeError as e:
        print("stopped:", e)
