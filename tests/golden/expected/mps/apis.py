import torch


def misc(x, seed):
    torch.mps.manual_seed(seed)
    torch.mps.manual_seed(seed)
    state = torch.mps.get_rng_state()
    t = torch.cuda.FloatTensor([1.0])
    h = torch.cuda.HalfTensor(2)
    is_half = isinstance(x, torch.cuda.HalfTensor)
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        y = x * 2
    torch.cuda.current_stream().wait_stream(s)
    y.record_stream(torch.cuda.current_stream())
    e = torch.mps.Event(enable_timing=True)
    e.record()
    torch.mps.empty_cache()
    used = torch.mps.current_allocated_memory() + torch.cuda.max_memory_reserved()
    torch.cuda.reset_peak_memory_stats()
    free, total = torch.cuda.mem_get_info()
    g = torch.cuda.CUDAGraph()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.cuda.utilization()
