import torch
import torch_musa  # noqa: F401


def misc(x, seed):
    torch.musa.manual_seed(seed)
    torch.musa.manual_seed_all(seed)
    state = torch.musa.get_rng_state()
    t = torch.musa.FloatTensor([1.0])
    h = torch.musa.HalfTensor(2)
    is_half = isinstance(x, torch.musa.HalfTensor)
    s = torch.musa.Stream()
    with torch.musa.stream(s):
        y = x * 2
    torch.musa.current_stream().wait_stream(s)
    y.record_stream(torch.musa.current_stream())
    e = torch.musa.Event(enable_timing=True)
    e.record()
    torch.musa.empty_cache()
    used = torch.musa.memory_allocated() + torch.musa.max_memory_reserved()
    torch.musa.reset_peak_memory_stats()
    free, total = torch.musa.mem_get_info()
    g = torch.musa.MUSAGraph()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.cuda.utilization()
