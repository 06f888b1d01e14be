"""On the CPU a CUDA device count is 0: used as spawn's process count (TP214) it starts no process, and DDP's device
ids reached through a kwargs dict (TP304) are refused by a CPU module.  Both are followed through the data flow."""
import pytest

from torchport.converter.run import Converter

ENGINE = '''import torch
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel


class DDPEngine:
    def __init__(self, workers=None):
        self.num_local_workers = workers or torch.cuda.device_count()

    def spawn(self, fn):
        mp.spawn(fn, nprocs=self.num_local_workers, join=True)


def main(fn):
    ngpus_per_node = torch.cuda.device_count()
    torch.multiprocessing.spawn(fn, args=(ngpus_per_node,), nprocs=ngpus_per_node)
    print(torch.cuda.device_count())


def wrap(model, rank):
    kwargs = dict(find_unused_parameters=True)
    kwargs["device_ids"] = [rank]
    kwargs.update(output_device=rank)
    return DistributedDataParallel(model, **kwargs)
'''


def convert(target):
    new, findings, _ = Converter(target).convert_text("engine.py", ENGINE.encode(), "python")
    return new.decode(), findings


def test_on_cpu_a_device_count_that_is_a_process_count_becomes_one_process():
    text, findings = convert("cpu")
    assert "self.num_local_workers = workers or 1" in text, "through the attribute the class assigns"
    assert "ngpus_per_node = 1\n" in text, "through a local name"
    assert "print(torch.cuda.device_count())" in text, "a count that is not a process count stays"
    assert sum(f.rule == "TP214" for f in findings) == 2


def test_on_cpu_ddp_gets_no_device_ids_through_its_kwargs_dict():
    text, _ = convert("cpu")
    assert 'kwargs["device_ids"] = None' in text and "kwargs.update(output_device=None)" in text


@pytest.mark.parametrize("target", ["npu", "mlu"])
def test_vendor_targets_keep_counts_and_device_ids(target):
    text, findings = convert(target)
    assert f"torch.{target}.device_count()" in text and 'kwargs["device_ids"] = [rank]' in text
    assert not [f for f in findings if f.rule in ("TP214", "TP304")]


def test_accelerator_spawns_at_least_one_process():
    text, _ = convert("accelerator")
    assert "ngpus_per_node = max(torch.accelerator.device_count(), 1)" in text
