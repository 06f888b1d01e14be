import torch
import torch_npu  # noqa: F401


def misc(x, seed):
    torch.npu.manual_seed(seed)
    torch.npu.manual_seed_all(seed)
    state = torch.npu.get_rng_state()
    t = torch.npu.FloatTensor([1.0])
    h = torch.npu.HalfTensor(2)
    is_half = isinstance(x, torch.npu.HalfTensor)
    s = torch.npu.Stream()
    with torch.npu.stream(s):
        y = x * 2
    torch.npu.current_stream().wait_stream(s)
    y.record_stream(torch.npu.current_stream())
    e = torch.npu.Event(enable_timing=True)
    e.record()
    torch.npu.empty_cache()
    used = torch.npu.memory_allocated() + torch.npu.max_memory_reserved()
    torch.npu.reset_peak_memory_stats()
    free, total = torch.npu.mem_get_info()
    g = torch.npu.NPUGraph()
    torch.npu.mstx.range_push("step")
    torch.npu.mstx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.npu.utilization()
