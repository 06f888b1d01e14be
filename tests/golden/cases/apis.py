import torch


def misc(x, seed):
    torch.cuda.manual_seed(seed)
    torch.cuda.manual_seed_all(seed)
    state = torch.cuda.get_rng_state()
    t = torch.cuda.FloatTensor([1.0])
    h = torch.cuda.HalfTensor(2)
    is_half = isinstance(x, torch.cuda.HalfTensor)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = x * 2
    torch.cuda.current_stream().wait_stream(s)
    y.record_stream(torch.cuda.current_stream())
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    torch.cuda.empty_cache()
    used = torch.cuda.memory_allocated() + torch.cuda.max_memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    free, total = torch.cuda.mem_get_info()
    g = torch.cuda.CUDAGraph()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.cuda.utilization()
