import torch


def misc(x, seed):
    torch.manual_seed(seed)
    torch.manual_seed(seed)
    state = torch.cuda.get_rng_state()
    t = torch.cuda.FloatTensor([1.0])
    h = torch.cuda.HalfTensor(2)
    is_half = isinstance(x, torch.cuda.HalfTensor)
    s = torch.Stream()
    with torch.cuda.stream(s):
        y = x * 2
    if torch.accelerator.is_available(): torch.accelerator.current_stream().wait_stream(s)
    if torch.accelerator.is_available(): y.record_stream(torch.accelerator.current_stream())
    e = torch.Event(enable_timing=True)
    e.record()
    if torch.accelerator.is_available(): torch.accelerator.empty_cache()
    used = (torch.accelerator.memory_allocated() if torch.accelerator.is_available() else 0) + (torch.accelerator.max_memory_reserved() if torch.accelerator.is_available() else 0)
    if torch.accelerator.is_available(): torch.accelerator.reset_peak_memory_stats()
    free, total = (torch.accelerator.get_memory_info() if torch.accelerator.is_available() else (0, 0))
    g = torch.accelerator.Graph()
    torch.cuda.nvtx.range_push("step")
    torch.cuda.nvtx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.cuda.utilization()
