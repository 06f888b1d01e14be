"""Type tests and tensor types written as strings (issue 13, items 6 and 9)."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel

model = nn.Linear(2, 2)
# A type test asks the same question on every target: not a use of DataParallel.
if isinstance(model, nn.parallel.DataParallel):
    model = model.module
if isinstance(model, (nn.DataParallel, DistributedDataParallel)):
    model = model.module
if type(model) is nn.DataParallel:
    model = model.module
is_parallel = type(model) in (nn.parallel.DataParallel, nn.parallel.DistributedDataParallel)  # YOLOX, yolov5
wrappers = [nn.DataParallel]  # a list that is not a type test: still a use
wrapped = nn.DataParallel(model)  # a use: reported where the target needs DDP

x = torch.zeros(2)
y = x.type("torch.FloatTensor")
z = x.type(torch.HalfTensor)
torch.set_default_tensor_type("torch.FloatTensor")
ids = torch.LongTensor([1, 2])
on_device = isinstance(x, torch.FloatTensor)
same_type = x.type() == "torch.FloatTensor"
label = "torch.cuda.FloatTensor is a legacy type"  # prose, not a type name

# A name bound once to a tuple, list or set of types and read only in type tests is a type test too.
PARALLEL_TYPES = (nn.DataParallel, DistributedDataParallel)
_PARALLEL_LIST = [nn.parallel.DataParallel]
_PARALLEL_SET = {nn.DataParallel}


def in_parallel(model):  # YOLOX 0.3.0 yolox/utils/ema.py is_parallel
    parallel_type = (
        nn.parallel.DataParallel,
        nn.parallel.DistributedDataParallel,
    )
    return isinstance(model, parallel_type)


def unwrap(model, flag: bool):
    wrappers = (nn.DataParallel,) if flag else (nn.DataParallel, DistributedDataParallel)  # transformers' form
    if isinstance(model, PARALLEL_TYPES) or type(model) in _PARALLEL_LIST or isinstance(model, (wrappers, nn.Linear)):
        return model.module
    if model.__class__ not in _PARALLEL_SET and issubclass(type(model), PARALLEL_TYPES):
        return model.module
    return model


def rebound(model):
    kinds = (nn.DataParallel,)  # rebound: a use
    kinds = kinds + (nn.Linear,)
    return isinstance(model, kinds)


def augmented(model):
    kinds = (nn.DataParallel,)  # augmented by more types: still only type-tested
    kinds += (nn.Linear,)
    return isinstance(model, kinds)


def passed(model):
    kinds = (nn.DataParallel,)  # passed to a function: a use
    print(kinds)
    return isinstance(model, kinds)


def returned():
    kinds = (nn.DataParallel,)  # returned: a use
    return kinds


def called(model):
    kinds = [nn.DataParallel]  # built through a subscript: a use
    return kinds[0](model)


class Holder:
    TYPES = (nn.DataParallel,)  # a class attribute, read as self.TYPES: a use

    def test(self, model):
        return isinstance(model, self.TYPES)


# Imported by name: `from torch.nn import DataParallel` read only by type tests imports and asks alike on every
# target (npu and mlu keep the class, they cannot run it): neither the import nor its type tests are reported.
from torch.nn import DataParallel
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.nn.parallel import DataParallel as DP
IMPORTED_TYPES = (DataParallel, DDP)


def unwrap_imported(model):
    if isinstance(model, IMPORTED_TYPES) or type(model) is DataParallel:
        return model.module
    return model.module if isinstance(model, (DataParallel, DDP)) else model


def unwrap_local(model):
    from torch.nn import DataParallel as Wrapper  # imported in a function: the same
    return model.module if issubclass(type(model), Wrapper) else model


def wrap_imported(model):  # DP is also called: its import and the call are reported, its type test is not
    if isinstance(model, DP):
        return model
    return DP(model)


def save_model(model):  # pytorch-metric-learning's save_model: a loop variable read only in type tests
    if any(isinstance(model, x) for x in [nn.DataParallel, nn.parallel.DistributedDataParallel]):
        return model.module
    for kind in (DataParallel, DDP):
        if type(model) is kind:
            return model.module
    return model


def wrap_each(model):
    return [kind(model) for kind in (nn.DataParallel,)]  # the loop variable is called: a use
