import torch
import torch.backends.cudnn as cudnn
from torch.profiler import ProfilerActivity, profile


def setup():
    cudnn.benchmark = True
    torch.backends.cudnn.deterministic = False
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    major, minor = torch.cuda.get_device_capability()
    props = torch.cuda.get_device_properties(0)
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    return major >= 8 and props.major >= 8 and sms


def prof(step):
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as p:
        step()
    with torch.autograd.profiler.profile(use_device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type) as p2:
        step()
    print(p.key_averages().table(sort_by="device_time_total"))
    return p2
