"""A prefetcher like yolox's, CUDA events and streams: the cpu output runs (tests/test_examples.py)."""
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
        torch.accelerator.current_stream().wait_stream(self.stream)
        batch = self.batch
        if batch is not None:
            self.record(batch)
        self.preload()
        return batch

    @staticmethod
    def _record_stream(batch):
        batch.record_stream(torch.accelerator.current_stream())


def timed(fn):
    start, end = torch.Event(enable_timing=True), torch.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    return start.elapsed_time(end)


def main():
    pf = Prefetcher([torch.ones(2) * i for i in range(3)])
    total, batch = 0.0, pf.next()
    while batch is not None:
        total += float(batch.sum())
        batch = pf.next()
    done = torch.Event()
    done.record()
    done.synchronize()
    return total


def side_stream():  # reported on cpu: torch.cpu.Stream has no device
    return torch.Stream(device=0)


if __name__ == "__main__":
    print(main())
