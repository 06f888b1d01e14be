import torch
import torch_mlu  # noqa: F401


def misc(x, seed):
    torch.mlu.manual_seed(seed)
    torch.mlu.manual_seed_all(seed)
    state = torch.mlu.get_rng_state()
    t = torch.mlu.FloatTensor([1.0])
    h = torch.mlu.HalfTensor(2)
    is_half = isinstance(x, torch.mlu.HalfTensor)
    s = torch.mlu.Stream()
    with torch.mlu.stream(s):
        y = x * 2
    torch.mlu.current_stream().wait_stream(s)
    y.record_stream(torch.mlu.current_stream())
    e = torch.mlu.Event(enable_timing=True)
    e.record()
    torch.mlu.empty_cache()
    used = torch.mlu.memory_allocated() + torch.mlu.max_memory_reserved()
    torch.mlu.reset_peak_memory_stats()
    free, total = torch.mlu.mem_get_info()
    g = torch.mlu.MLUGraph()
    torch.mlu.cnpx.range_push("step")
    torch.mlu.cnpx.range_pop()
    return state, t, h, is_half, y, e, used, free, total, g, torch.cuda.utilization()
