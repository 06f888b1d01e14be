"""A prefetcher like yolox's, CUDA events and streams, a checkpoint mapped through a lambda: the cpu output
runs (tests/test_examples.py)."""
import io

import torch


class Prefetcher:
    def __init__(self, loader):
        self.loader = iter(loader)
        self.stream = torch.Stream()
        self.record = Prefetcher._record_stream
        self.preload()

    def preload(self):
        self.batch = next(self.loader, None)
        if self.batch is None:
            return
        with torch.cuda.stream(self.stream):
            self.batch = self.batch.to((torch.accelerator.current_accelerator() or torch.device("cpu")).type, non_blocking=True)

    def next(self):
        if torch.accelerator.is_available(): torch.accelerator.current_stream().wait_stream(self.stream)
        batch = self.batch
        if batch is not None:
            self.record(batch)
        self.preload()
        return batch

    @staticmethod
    def _record_stream(batch):
        if torch.accelerator.is_available(): batch.record_stream(torch.accelerator.current_stream())


def timed(fn):
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    return start.elapsed_time(end)


def reload(t):
    buf = io.BytesIO()
    torch.save(t, buf)
    buf.seek(0)
    return torch.load(buf, map_location=lambda storage, loc: storage.to(device=(torch.accelerator.current_accelerator() or torch.device("cpu")).type))


def main():
    pf = Prefetcher([torch.ones(2) * i for i in range(3)])
    total, batch, seen = 0.0, pf.next(), []
    while batch is not None:
        total += float(batch.sum())
        seen.append(batch)
        batch = pf.next()
    _ = [b.record_stream(torch.accelerator.current_stream()) for b in seen]
    total += float(reload(torch.ones(2)).sum())
    done = torch.Event()
    done.record()
    done.synchronize()
    return total


def side_stream():  # reported on cpu: torch.cpu.Stream has no device
    return torch.Stream(device=0)


if __name__ == "__main__":
    print(main())
