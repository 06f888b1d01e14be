import torch


def misc(x, seed):
    torch.xpu.manual_seed(seed)
    torch.xpu.manual_seed_all(seed)
    state = torch.xpu.get_rng_state()
    t = torch.cuda.FloatTensor([1.0])
    h = torch.cuda.HalfTensor(2)
    is_half = isinstance(x, torch.cuda.HalfTensor)
    s = torch.xpu.Stream()
    with torch.xpu.stream(s):
        y = x * 2
    torch.xpu.current_stream().wait_stream(s)
    y.record_stream(torch.xpu.current_stream())
    e = torch.xpu.Event(enable_timing=True)
    e.record()
    torch.xpu.empty_cache()
    used = torch.xpu.memory_allocated() + torch.xpu.max_memory_reserved()
    torch.xpu.reset_peak_memory_stats()
    free, total = torch.xpu.mem_get_info()
    g = torch.xpu.XPUGraph()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.xpu.utilization()
