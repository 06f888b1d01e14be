"""Requirements on CUDA's presence (yolox's distributed worker) next to questions about it."""
import torch


def worker(n_gpus):
    assert torch.cuda.is_available(), "cuda is not available. Please check your installation."
    assert n_gpus <= torch.cuda.device_count()
    if not torch.cuda.is_available():
        raise RuntimeError("this script needs a GPU")
    if torch.cuda.is_available():
        return "cuda"
    return "cpu"


if __name__ == "__main__":
    try:
        print(worker(0))
    except RuntimeError as e:
        print("stopped:", e)
