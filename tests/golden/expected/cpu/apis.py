import torch


def misc(x, seed):
    torch.manual_seed(seed)
    torch.manual_seed(seed)
    state = torch.get_rng_state()
    t = torch.FloatTensor([1.0])
    h = torch.HalfTensor(2)
    is_half = isinstance(x, torch.HalfTensor)
    s = torch.cpu.Stream()
    with torch.cpu.stream(s):
        y = x * 2
    torch.cpu.current_stream().wait_stream(s)
    pass
    e = torch.cuda.Event(enable_timing=True)
    e.record()
    torch.cuda.empty_cache()
    used = (torch.cuda.memory_allocated() if torch.cuda.is_available() else 0) + (torch.cuda.max_memory_reserved() if torch.cuda.is_available() else 0)
    if torch.cuda.is_available(): torch.cuda.reset_peak_memory_stats()
    free, total = (torch.cuda.mem_get_info() if torch.cuda.is_available() else (0, 0))
    g = torch.cuda.CUDAGraph()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.cuda.utilization()
