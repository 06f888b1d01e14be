"""The run-time patches, one small function per area, applied in order by `apply_all`.

What each CUDA name becomes comes from the same data `convert` uses (the target file and
`kb.apimap.ApiMap`); this module only knows *where* CUDA shows up at run time:
the `torch.cuda` namespace, device arguments, tensor and module methods, `torch.load`,
collectives, DDP, AMP and the profiler.  Nothing here intercepts tensor operations: the
hot path (math on tensors that already live on the device) runs untouched.
"""
from __future__ import annotations

import contextlib
import dis
import functools
import importlib
import re
import sys
import types
from typing import cast

from ..kb import catalog
from ..kb.apimap import ADAPT, MAP, UNSUPPORTED, ApiMap
from . import standins
from .callers import kind_of_file, redirects, tells_target
from .session import Session, TorchportMissing

_DEVICE_IN_SIGNATURE = re.compile(r"\bdevice\s*[=:]")


# ------------------------------------------------------------------ helpers
def _jit_like(s: Session, wrapper, original) -> None:
    """Let TorchScript compile calls to `wrapper` as it compiled `original` (an aten builtin)."""
    try:
        from torch.jit import _builtins
    except ImportError:  # pragma: no cover
        return
    name = _builtins._find_builtin(original)
    if name is not None:
        s.patcher.set_item(_builtins._get_builtin_table(), id(wrapper), name)


def _map_device_kwarg(s: Session, api: str, kwargs: dict) -> None:
    device = kwargs.get("device")
    if device is not None:
        new = s.devices.map_device_arg(device)
        if new is not device:
            kwargs["device"] = new
            s.count(api)


def _device_kwarg_wrapper(s: Session, api: str, fn):
    plain, map_arg, real_device = s.devices.plain, s.devices.map_device_arg, s.devices.real_device

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if kwargs:
            device = kwargs.get("device")
            if device is not None and (device.__class__ is not str and device.__class__ is not real_device
                                       or device not in plain):  # hot path: a device seen before, not CUDA
                new = map_arg(device)
                if new is not device:
                    kwargs["device"] = new
                    s.count(api)
        return fn(*args, **kwargs)
    return wrapper


def _proxy_class(s: Session, api: str, real: type, map_args):
    """A stand-in for a C type that cannot be subclassed (torch.device, torch.Generator): calling it
    builds the real object from mapped arguments; isinstance, issubclass and class attributes
    behave as the real type's."""
    class Meta(type):
        def __call__(cls, *args, **kwargs):
            new_args, new_kwargs = map_args(args, kwargs)
            if new_args is not args or new_kwargs is not kwargs:
                s.count(api)
            return real(*new_args, **new_kwargs)

        def __instancecheck__(cls, obj):
            return isinstance(obj, real)

        def __subclasscheck__(cls, sub):
            return issubclass(sub, real)

        def __getattr__(cls, name):
            return getattr(real, name)

    return Meta(real.__name__, (), {"__doc__": real.__doc__, "__module__": real.__module__,
                                    "__torchport_real__": real})


# The methods of torch.cuda's classes whose calls a run's report counts (as `torch.cuda.Event.record`...): what
# the target (or the host stand-in) did in their place.
COUNTED_METHODS = {"Event": ("record", "synchronize", "query", "wait", "elapsed_time"),
                   "Stream": ("synchronize", "query", "wait_stream", "wait_event", "record_event")}


def _counting_class(s: Session, api: str, cls: type, methods: tuple) -> type:
    """`cls` with each of `methods` counted when called (`{api}.{method}`); `cls` itself where it cannot be
    subclassed."""
    def counted(name):
        original = getattr(cls, name)

        @functools.wraps(original)
        def method(self, *args, **kwargs):
            s.count(f"{api}.{name}")
            return original(self, *args, **kwargs)
        return method

    try:
        return type(cls.__name__, (cls,), {"__module__": cls.__module__, "__qualname__": cls.__qualname__,
                                          "__doc__": cls.__doc__,
                                          **{m: counted(m) for m in methods if callable(getattr(cls, m, None))}})
    except TypeError:   # a final class of an extension
        return cls


def _note_library_asked(s: Session, api: str) -> None:
    """A library (not torch) was told CUDA's real answer: the report says so once (Session.told_cuda)."""
    if s.told_cuda_noted:   # on the hot path of every is_cuda a library asks: nothing more once said
        return
    filename = sys._getframe(2).f_code.co_filename
    if kind_of_file(filename) == "library":
        s.told_cuda(api, filename)


def _counted_calls(s: Session, api: str, fn):
    """`fn` counted as `api` when called (what `from torch.cuda import fn` gets: the import itself calls nothing)."""
    @functools.wraps(fn)
    def call(*args, **kwargs):
        s.count(api)
        return fn(*args, **kwargs)
    return call


def _asked_how(frame) -> str:
    """How the code in `frame` is reaching a torch.cuda name: "import" (`from torch.cuda import X`), "probe" (a call
    of hasattr or getattr with a default: the name is asked about, not used) or "use"."""
    try:
        op = dis.opname[frame.f_code.co_code[frame.f_lasti]]
    except (IndexError, AttributeError):
        return "use"
    if op == "IMPORT_FROM":
        return "import"
    return "use" if op.startswith(("LOAD_", "STORE_", "DELETE_")) else "probe"


def _subclass_mapping_init(s: Session, api: str, base: type, mapper):
    """A subclass of `base` whose __init__ arguments go through `mapper(args, kwargs)`."""
    def __init__(self, *args, **kwargs):
        new_args, new_kwargs = mapper(args, kwargs)
        if new_args is not args or new_kwargs is not kwargs:
            s.count(api)
        base.__init__(self, *new_args, **new_kwargs)

    return type(base.__name__, (base,), {"__init__": __init__, "__module__": base.__module__,
                                         "__qualname__": base.__qualname__, "__doc__": base.__doc__})


# ------------------------------------------------------------------ torch.cuda
class CountingModule(types.ModuleType):
    """torch.cuda (and its submodules) while patched.  The module's own dict keeps the real objects
    (torch.cuda's functions call each other through it); an attribute access from the project
    gets the target's object instead, counted.  See callers.redirects for who gets what."""

    def __getattribute__(self, name):
        if name[:1] != "_":
            session, table = types.ModuleType.__getattribute__(self, "__dict__")["__torchport__"]
            entry = table.get(name)
            if entry is not None and redirects(session.policy):
                api, value = entry
                if api:
                    if callable(value) and isinstance(value, (types.FunctionType, types.BuiltinFunctionType)) \
                            and _asked_how(sys._getframe(1)) == "import":
                        return _counted_calls(session, api, value)   # `from torch.cuda import f`: each f() counts
                    session.count(api)
                if type(value) is TorchportMissing:  # absent on the target: hasattr() says False
                    how = _asked_how(sys._getframe(1))
                    if how == "import":   # `from torch.cuda import X`: torchport's reason, not "cannot import name"
                        session.count(value.api, "failed", str(value))
                        raise ImportError(str(value), name="torch.cuda") from None
                    session.count(value.api, "probed" if how == "probe" else "failed", str(value))
                    raise value
                return value
        return types.ModuleType.__getattribute__(self, name)


def patch_namespace(s: Session) -> None:
    """torch.cuda.X -> the target's X for every public name of torch.cuda (and its submodules) that the
    target has; `runtime.standins` where they do the job better (or the target lacks an observing
    call); an AttributeError naming the target for the names it lacks; `[runtime] noop` names do nothing."""
    torch = s.torch
    api_map = ApiMap(s.target)
    cat = catalog()
    noop = set(s.target.runtime.noop)
    host = s.host
    modules = {"": torch.cuda}
    for sub in cat.cuda_modules:
        module = getattr(torch.cuda, sub, None)
        if isinstance(module, types.ModuleType):
            modules[sub] = module
    for sub, module in modules.items():
        names = cat.cuda_names - set(cat.cuda_modules) if sub == "" else cat.cuda_modules[sub]
        table = {}
        for name in sorted(names):
            qualname = f"torch.cuda.{sub}.{name}" if sub else f"torch.cuda.{name}"
            original = module.__dict__.get(name)
            if original is None or (sub == "" and name in ("is_available", "device_count")):
                continue
            if qualname in noop:  # counted when called, as a no-op
                table[name] = ("", s.noop(qualname, f"nothing to do on {s.title}"))
                continue
            r = api_map.resolve(qualname)
            new = s.object(r.new) if r is not None and r.kind in (MAP, ADAPT) else None
            work = standins.working(host, qualname, target_has=new is not None)
            if work is not None:
                table[name] = (qualname, work)
                continue
            if r is None or r.kind not in (MAP, ADAPT, UNSUPPORTED):
                continue
            if new is None:
                known = standins.canonical(qualname)
                if known in standins.NEUTRAL and s.on_missing != "raise":  # counted when called
                    table[name] = ("", s.neutral(qualname, standins.NEUTRAL[known](host), standins.meaning(known)))
                elif callable(original):  # counted when used, as a failure
                    why = r.message if r.kind == UNSUPPORTED else f"{r.new} is not in the installed {s.target.namespace}"
                    table[name] = ("", s.missing(qualname, why, like=original))
                continue
            table[name] = (qualname, _amp_adapter(s, qualname, new, cast(dict, r.adapter))   # ADAPT: an adapter
                           if r.kind == ADAPT else new)
        for name, methods in (COUNTED_METHODS if sub == "" else {}).items():
            if name in table and isinstance(table[name][1], type):
                table[name] = (table[name][0], _counting_class(s, f"torch.cuda.{name}", table[name][1], methods))
        if table:
            s.patcher.set(module, "__torchport__", (s, table))
            s.patcher.set_class(module, CountingModule)
    _patch_queries(s)


def _patch_queries(s: Session) -> None:
    """is_available / device_count answer for the target or for CUDA, by the caller policy."""
    torch = s.torch
    real_available, real_count = torch.cuda.is_available, torch.cuda.device_count
    if s.device_type == "cpu":
        def target_available():
            if s.policy == "project" and not s.cpu_stand_in_noted:   # said once (--policy always: the user's choice)
                s.cpu_stand_in_noted = True
                s.stats.notes.append("the project asked torch.cuda.is_available() and was told True: on the cpu "
                                     "target the CPU stands in for CUDA, so code that picks CUDA-only kernels on "
                                     "this answer (Triton, flash-attn, fused CUDA optimizers) takes them and may fail "
                                     "or stop; --policy real tells it the truth (False)")
            return True

        def target_count():
            return 1
    else:
        namespace = getattr(torch, s.device_type)
        target_available, target_count = namespace.is_available, namespace.device_count

    is_available = _query(s, real_available, target_available, "torch.cuda.is_available")
    device_count = _query(s, real_count, target_count, "torch.cuda.device_count")
    s.patcher.set(torch.cuda, "is_available", is_available)
    s.patcher.set(torch.cuda, "device_count", device_count)


def _query(s: Session, real, for_target, api: str, applies=None):
    """A question about CUDA (`real`), answered for the target by `for_target` where the caller policy tells the caller
    about the target (callers.tells_target), else by `real`; only the calls `applies` accepts, when given."""
    policy = s.policy

    @functools.wraps(real)
    def ask(*args, **kwargs):
        if applies is not None and not applies(*args, **kwargs):
            return real(*args, **kwargs)
        if tells_target(policy):
            s.count(api)
            return for_target(*args, **kwargs)
        _note_library_asked(s, api)
        return real(*args, **kwargs)
    return ask


def _amp_dtype(s: Session, chosen):
    """The dtype CUDA autocast code gets on the target: its choice, or CUDA's float16; float16 becomes
    --amp-dtype when given, else the AMP dtype the target data names (`[runtime] amp_dtype`, bfloat16 on
    cpu: float16 kernels there are slow), said once either way."""
    torch = s.torch
    chosen = torch.float16 if chosen is None else chosen
    if chosen != torch.float16:
        return chosen
    name = s.amp_dtype or s.target.runtime.amp_dtype
    if not name or name == "float16":
        if s.amp_dtype and s.target.runtime.amp_dtype and s.target.runtime.amp_dtype != "float16":
            _amp_note(s, f"CUDA autocast float16 stays float16 on {s.title} (--amp-dtype float16; the target's "
                         f"AMP dtype is {s.target.runtime.amp_dtype}): float16's overflow at 65504 is kept")
        return chosen
    why = ("--amp-dtype" if s.amp_dtype else
           "the target's AMP dtype; [runtime] amp_dtype in its target file; --amp-dtype float16 keeps float16")
    text = f"CUDA autocast float16 runs as {name} on {s.title} ({why})"
    _amp_note(s, text)
    s.count("torch.autocast(float16)", "redirected", text)
    return getattr(torch, name)


def _amp_note(s: Session, text: str) -> None:
    """Say once, in the report and as a warning, what autocast's dtype became."""
    if "amp_dtype" not in s._warned:
        s.stats.notes.append(text)
    s.warn_once("amp_dtype", text)


def _amp_adapter(s: Session, api: str, new, spec: dict):
    """torch.cuda.amp.X -> torch.amp.X with the target device inserted where `spec` says, CUDA's
    defaults kept (autocast: float16), old positional parameters passed by keyword."""
    device, positional = s.device_type, spec.get("positional", [])
    defaults = {k: getattr(s.torch, v) for k, v in spec.get("defaults", {}).items()}

    def adapt(args, kwargs):
        kwargs = dict(kwargs)
        if positional:
            kwargs.update(zip(positional, args))
            args = ()
        for k, v in defaults.items():
            if kwargs.get(k) is None:
                kwargs[k] = v
        if "dtype" in kwargs and api.endswith("autocast") and kwargs.get("enabled", True):   # a disabled one runs no AMP
            kwargs["dtype"] = _amp_dtype(s, kwargs["dtype"])
        if spec["device"] == "first":
            return (device, *args), kwargs
        kwargs[spec["device"]] = device
        return args, kwargs

    if isinstance(new, type):
        def __init__(self, *args, **kwargs):
            args, kwargs = adapt(args, kwargs)
            new.__init__(self, *args, **kwargs)

        return type(new.__name__, (new,), {"__init__": __init__, "__module__": "torchport.runtime",
                                           "__doc__": f"{api} on {s.title} (torchport): {new.__module__}.{new.__name__}"})

    @functools.wraps(new)
    def call(*args, **kwargs):
        if not kwargs and len(args) == 1 and callable(args[0]) and spec["device"] != "first":
            return new(args[0], **adapt((), {})[1])  # bare decorator: @custom_fwd
        args, kwargs = adapt(args, kwargs)
        return new(*args, **kwargs)
    return call


# ------------------------------------------------------------------ devices in torch.*
def device_functions(torch) -> list:
    """Functions of `torch` whose documented signature takes a device (factories and *_like)."""
    names = []
    for name in dir(torch):
        if name.startswith("_"):
            continue
        fn = getattr(torch, name, None)
        if not callable(fn) or isinstance(fn, type):
            continue
        head = (getattr(fn, "__doc__", None) or "").strip().split("\n\n", 1)[0]
        if _DEVICE_IN_SIGNATURE.search(head):
            names.append(name)
    return names


def patch_factories(s: Session) -> None:
    """torch.ones(device="cuda") and every factory: the device argument mapped.  torch's default-device mode
    (set_default_device, `with torch.device(...)`) gives a device to the factories it knows
    (torch.utils._device._device_constructors, worked out once): these wrappers and the originals they call
    are both among them, whenever that set was first worked out."""
    torch = s.torch
    from torch.utils import _device

    known = getattr(_device._device_constructors, "__wrapped__", None)
    constructors = set(known()) if known is not None else set()   # the originals, before they are wrapped
    for name in device_functions(torch):
        original = getattr(torch, name)
        wrapper = _device_kwarg_wrapper(s, f"torch.{name}(device=)", original)
        s.patcher.set(torch, name, wrapper)
        _jit_like(s, wrapper, original)
        if original in constructors:
            constructors.add(wrapper)
    if known is not None:
        frozen = frozenset(constructors)
        s.patcher.set(_device, "_device_constructors", lambda: frozen)


def patch_device_types(s: Session) -> None:
    """torch.device("cuda", ...) and torch.Generator(device="cuda") build target objects."""
    torch, devices = s.torch, s.devices
    real_device = torch.device

    def device_args(args, kwargs):
        if kwargs:
            kind = kwargs.get("type", args[0] if args else None)
            if kind == "cuda":
                index = kwargs.get("index", args[1] if len(args) > 1 else None)
                return (devices.name(index),), {}
            return args, kwargs
        if len(args) == 2 and args[0] == "cuda":
            return (devices.name(args[1]),), {}
        if len(args) == 1:
            new = devices.map_device_arg(args[0])
            if new is not args[0]:
                return (new,), kwargs
        return args, kwargs

    proxy = _proxy_class(s, "torch.device", real_device, device_args)
    s.patcher.set(torch, "device", proxy)

    real_generator = torch.Generator

    def generator_args(args, kwargs):
        if args:
            new = devices.map_device_arg(args[0])
            if new is not args[0]:
                return (new, *args[1:]), kwargs
        if "device" in kwargs:
            new = devices.map_device_arg(kwargs["device"])
            if new is not kwargs["device"]:
                return args, {**kwargs, "device": new}
        return args, kwargs

    s.patcher.set(torch, "Generator", _proxy_class(s, "torch.Generator(device=)", real_generator, generator_args))


# ------------------------------------------------------------------ tensors and modules
def _to_args(s: Session, api: str, args: tuple, kwargs: dict):
    if args:
        first = args[0]
        new = s.devices.map_device_arg(first)
        if new is not first:
            s.count(api)
            args = (new, *args[1:])
    if kwargs and "device" in kwargs:
        _map_device_kwarg(s, api, kwargs)  # kwargs is this call's own dict
    return args, kwargs


def patch_tensor(s: Session) -> None:
    torch, devices, policy = s.torch, s.devices, s.policy
    Tensor = torch.Tensor
    original_to = Tensor.to

    map_arg, real_device, plain = devices.map_device_arg, devices.real_device, devices.plain

    @functools.wraps(original_to)
    def to(self, *args, **kwargs):
        if args:
            first = args[0]
            kind = first.__class__
            if (kind is real_device or kind is str) and first not in plain or kind is int:
                new = map_arg(first)
                if new is not first:
                    s.count("torch.Tensor.to(device)")
                    args = (new, *args[1:])
        if kwargs and "device" in kwargs:
            _map_device_kwarg(s, "torch.Tensor.to(device)", kwargs)
        return original_to(self, *args, **kwargs)

    def cuda(self, device=None, non_blocking=False, memory_format=torch.preserve_format):
        s.count("torch.Tensor.cuda")
        if isinstance(device, (str, devices.real_device)):
            target = devices.map(device)
        else:
            target = devices.name(device)
        return original_to(self, target, non_blocking=non_blocking, memory_format=memory_format)

    real_is_cuda = torch._C.TensorBase.is_cuda.__get__

    def is_cuda(self):
        if tells_target(policy):
            return self.device.type == devices.type
        if self.device.type == devices.type:
            _note_library_asked(s, "Tensor.is_cuda")
        return real_is_cuda(self)

    s.patcher.set(Tensor, "to", to)
    s.patcher.set(Tensor, "cuda", cuda)
    s.patcher.set(Tensor, "is_cuda", property(is_cuda, doc="torchport: True on the target device for the project's code"))
    for name in ("new_empty", "new_empty_strided", "new_full", "new_ones", "new_tensor", "new_zeros"):
        original = getattr(Tensor, name, None)
        if original is not None:
            s.patcher.set(Tensor, name, _device_kwarg_wrapper(s, f"torch.Tensor.{name}(device=)", original))
    _patch_legacy_type(s, Tensor)
    if s.target.host:  # host tensors belong to no stream: nothing to record
        original_record = Tensor.record_stream

        def record_stream(self, stream):
            if self.device.type == "cpu":
                s.count("torch.Tensor.record_stream", "noop", f"host tensors need no stream bookkeeping on {s.title}")
                return None
            return original_record(self, stream)

        s.patcher.set(Tensor, "record_stream", record_stream)
    if not s.target.runtime.pinned_memory:
        def pin_memory(self, device=None):
            s.count("torch.Tensor.pin_memory", "noop", f"no pinned memory on {s.title}: the tensor is returned as is")
            return self

        s.patcher.set(Tensor, "pin_memory", pin_memory)
        loader = torch.utils.data.DataLoader
        original_init = loader.__init__

        @functools.wraps(original_init)
        def init(self, *args, **kwargs):
            if kwargs.get("pin_memory"):
                s.count("torch.utils.data.DataLoader(pin_memory=True)", "noop",
                        f"no pinned memory on {s.title}: pin_memory=False")
                kwargs["pin_memory"] = False
            original_init(self, *args, **kwargs)

        s.patcher.set(loader, "__init__", init)


def _patch_legacy_type(s: Session, Tensor) -> None:
    """x.type("torch.cuda.FloatTensor") / x.type(torch.cuda.FloatTensor) -> that dtype on the target."""
    torch, original_type = s.torch, Tensor.type

    @functools.wraps(original_type)
    def type_(self, dtype=None, non_blocking=False, **kwargs):
        if isinstance(dtype, str):
            new = standins.legacy_dtype(torch, dtype) if dtype.startswith("torch.cuda.") else None
        else:
            new = getattr(dtype, "__torchport_dtype__", None)
        if new is None:
            return original_type(self, dtype, non_blocking, **kwargs)
        s.count("torch.Tensor.type(torch.cuda.*)")
        return self.to(device=s.devices.name(), dtype=new, non_blocking=non_blocking)

    s.patcher.set(Tensor, "type", type_)


def patch_module(s: Session) -> None:
    nn, devices = s.torch.nn, s.devices
    original_to = nn.Module.to

    @functools.wraps(original_to)
    def to(self, *args, **kwargs):
        if args or kwargs:
            args, kwargs = _to_args(s, "torch.nn.Module.to(device)", args, kwargs)
        return original_to(self, *args, **kwargs)

    def cuda(self, device=None):
        s.count("torch.nn.Module.cuda")
        return original_to(self, devices.map(device) if device is not None else devices.name())

    s.patcher.set(nn.Module, "to", to)
    s.patcher.set(nn.Module, "cuda", cuda)
    if not s.target.runtime.sync_batchnorm:
        _patch_sync_batchnorm(s)


def _patch_sync_batchnorm(s: Session) -> None:
    """SyncBatchNorm where the target's process group cannot synchronise statistics: each process
    normalises with its own batch statistics (plain BatchNorm), warned once and counted."""
    nn = s.torch.nn
    base_forward = nn.modules.batchnorm._BatchNorm.forward
    sync_forward = nn.SyncBatchNorm.forward
    text = (f"torch.nn.SyncBatchNorm cannot synchronise statistics on {s.title}: it runs as BatchNorm "
            f"(each process uses its own batch statistics)")

    dist = s.torch.distributed

    @functools.wraps(sync_forward)
    def forward(self, input):
        if (input.device.type != s.device_type or not self.training or not dist.is_available()
                or not dist.is_initialized()):  # nothing to synchronise: SyncBatchNorm runs as BatchNorm itself
            return sync_forward(self, input)
        s.count("torch.nn.SyncBatchNorm", "standin", text)
        s.warn_once("torch.nn.SyncBatchNorm", text)
        return base_forward(self, input)

    s.patcher.set(nn.SyncBatchNorm, "forward", forward)


# ------------------------------------------------------------------ checkpoints
def patch_load(s: Session) -> None:
    torch, devices = s.torch, s.devices
    original_load = torch.load
    from torch.serialization import default_restore_location

    def restore(storage, location):
        new = devices.location(location)
        if new is not location:
            s.count("torch.load(CUDA storage)")
        return default_restore_location(storage, new)

    @functools.wraps(original_load)
    def load(f, map_location=None, *args, **kwargs):
        if map_location is None:
            map_location = restore
        elif isinstance(map_location, dict):  # storages the dict does not name are restored to the target
            table = map_location

            def restore_mapped(storage, location):
                return restore(storage, table.get(location, location))

            map_location = restore_mapped
        elif not callable(map_location):
            new = devices.map(map_location)
            if new is not map_location:
                s.count("torch.load(map_location=)")
                map_location = new
        return original_load(f, map_location, *args, **kwargs)

    s.patcher.set(torch, "load", load)


# ------------------------------------------------------------------ distributed
def map_backend(s: Session, backend):
    """'nccl' -> the target's backend; 'cuda:nccl,cpu:gloo' -> per-device pairs for the target."""
    if not isinstance(backend, str):
        return backend
    if backend.lower() == "nccl":
        return s.backend
    if ":" in backend and "nccl" in backend.lower():
        pairs: dict[str, str] = {}
        for part in backend.split(","):
            dev, _, name = part.partition(":")
            dev = s.device_type if dev.strip() == "cuda" else dev.strip()
            name = s.backend if name.strip().lower() == "nccl" else name.strip()
            pairs.setdefault(dev, name)
        if len(set(pairs.values())) == 1:
            return next(iter(pairs.values()))
        return ",".join(f"{d}:{b}" for d, b in pairs.items())
    return backend


def patch_distributed(s: Session) -> None:
    torch = s.torch
    if not torch.distributed.is_available():
        return
    dist = torch.distributed
    c10d = dist.distributed_c10d
    for name in ("init_process_group", "new_group"):
        original = getattr(c10d, name)
        backend_first = name == "init_process_group"

        def wrapper(*args, __original=original, __name=name, __first=backend_first, **kwargs):
            if __first and args:
                new = map_backend(s, args[0])
                if new is not args[0]:
                    s.count(f"torch.distributed.{__name}(backend)")
                    args = (new, *args[1:])
            if "backend" in kwargs:
                new = map_backend(s, kwargs["backend"])
                if new is not kwargs["backend"]:
                    s.count(f"torch.distributed.{__name}(backend)")
                    kwargs["backend"] = new
            if kwargs.get("device_id") is not None:
                new = s.devices.map_device_arg(kwargs["device_id"])
                if new is not kwargs["device_id"]:
                    s.count(f"torch.distributed.{__name}(device_id)")
                    kwargs["device_id"] = None if s.device_type == "cpu" else torch.device(new)
            return __original(*args, **kwargs)

        wrapper = functools.wraps(original)(wrapper)
        s.patcher.set(c10d, name, wrapper)
        if getattr(dist, name, None) is original:
            s.patcher.set(dist, name, wrapper)
    _patch_backend_queries(s)
    ddp = torch.nn.parallel.DistributedDataParallel
    original_init = ddp.__init__

    @functools.wraps(original_init)
    def init(self, module, device_ids=None, output_device=None, *args, **kwargs):
        if device_ids is not None or output_device is not None:
            s.count("torch.nn.parallel.DistributedDataParallel(device_ids)")
            if s.device_type == "cpu":  # DDP on CPU modules takes no device ids
                device_ids = output_device = None
            else:
                device_ids = [s.devices.map_device_arg(d) for d in device_ids] if device_ids else device_ids
                output_device = s.devices.map_device_arg(output_device)
        original_init(self, module, device_ids, output_device, *args, **kwargs)

    s.patcher.set(ddp, "__init__", init)


def _patch_backend_queries(s: Session) -> None:
    """`is_nccl_available()` and `is_backend_available("nccl")`: init_process_group runs "nccl" as the backend
    map_backend maps it to, so a caller told about the target (the policy, as for torch.cuda.is_available) hears
    whether that backend is available.  The vendors' shims answer is_nccl_available so too: Ascend/pytorch@9e73e708a
    torch_npu/contrib/transfer_to_npu.py:515 (is_hccl_available), Cambricon/torch_mlu@9e95f97
    torch_mlu/utils/gpu_migration/migration.py:870-871 (is_cncl_available)."""
    dist = s.torch.distributed
    c10d = dist.distributed_c10d
    if map_backend(s, "nccl") == "nccl":   # hip: nccl is the run's own backend
        return
    real_available = c10d.is_backend_available
    # name -> (the target's answer, which calls it answers: None for all; the others get torch's answer)
    queries = {"is_nccl_available": (lambda: real_available(s.backend), None),
               "is_backend_available": (lambda backend: real_available(map_backend(s, backend)),
                                        lambda backend: map_backend(s, backend) != backend)}
    for name, (for_target, applies) in queries.items():
        real = getattr(c10d, name)
        ask = _query(s, real, for_target, f"torch.distributed.{name}", applies)
        if getattr(dist, name, None) is real:
            s.patcher.set(dist, name, ask)
        s.patcher.set(c10d, name, ask)


# ------------------------------------------------------------------ AMP and profiler
def patch_amp(s: Session) -> None:
    """torch.autocast("cuda") / torch.amp.GradScaler("cuda", or no device: it defaults to "cuda") /
    custom_fwd(device_type="cuda") -> the target; autocast gets CUDA's float16 when the code did not choose a
    dtype, unless the target data names its own AMP dtype for it (`_amp_dtype`)."""
    torch, device = s.torch, s.device_type
    amp = torch.amp

    def autocast_args(args, kwargs):
        kind = kwargs.get("device_type", args[0] if args else None)
        if kind != "cuda":
            return args, kwargs
        kwargs = dict(kwargs)
        if args:
            args = (device, *args[1:])
        else:
            kwargs["device_type"] = device
        if not kwargs.get("enabled", args[2] if len(args) > 2 else True):
            return args, kwargs   # a disabled autocast runs no AMP: nothing to choose or to report
        if len(args) >= 2:
            args = (args[0], _amp_dtype(s, args[1]), *args[2:])
        else:
            kwargs["dtype"] = _amp_dtype(s, kwargs.get("dtype"))
        return args, kwargs

    autocast = _subclass_mapping_init(s, "torch.autocast(device_type)", amp.autocast, autocast_args)
    s.patcher.set(torch, "autocast", autocast)
    s.patcher.set(amp, "autocast", autocast)

    def scaler_args(args, kwargs):
        if args and args[0] == "cuda":
            return (device, *args[1:]), kwargs
        if not args and kwargs.get("device", "cuda") == "cuda":   # also left out: it defaults to "cuda"
            return args, {**kwargs, "device": device}
        return args, kwargs

    scaler = _subclass_mapping_init(s, "torch.amp.GradScaler(device)", amp.GradScaler, scaler_args)
    if getattr(torch, "GradScaler", None) is amp.GradScaler:   # torch.GradScaler is the same class
        s.patcher.set(torch, "GradScaler", scaler)
    s.patcher.set(amp, "GradScaler", scaler)
    for name in ("custom_fwd", "custom_bwd"):
        original = getattr(amp, name, None)
        if original is None:
            continue

        def custom(*args, __original=original, __name=name, **kwargs):
            if kwargs.get("device_type") == "cuda":
                s.count(f"torch.amp.{__name}(device_type)")
                kwargs["device_type"] = device
            return __original(*args, **kwargs)

        s.patcher.set(amp, name, functools.wraps(original)(custom))


def patch_profiler(s: Session) -> None:
    """ProfilerActivity.CUDA in torch.profiler.profile(activities=...) -> the target's activity, or
    dropped (and counted) when the target has none."""
    torch = s.torch
    profiler = torch.profiler
    r = ApiMap(s.target).resolve("torch.profiler.ProfilerActivity.CUDA")
    replacement = s.object(r.new) if r is not None and r.kind == MAP else None
    cuda = profiler.ProfilerActivity.CUDA
    why = r.message if r is not None and r.kind != MAP else ""

    def profile_args(args, kwargs):
        activities = kwargs.get("activities", args[0] if args else None)
        if not activities or cuda not in activities:
            return args, kwargs
        new = [a for a in activities if a != cuda]
        if replacement is not None:
            new.append(replacement)
        else:
            s.count("torch.profiler.ProfilerActivity.CUDA", "dropped", why or f"no device activity on {s.title}")
        if args:
            return (new, *args[1:]), kwargs
        return args, {**kwargs, "activities": new}

    s.patcher.set(profiler, "profile",
                  _subclass_mapping_init(s, "torch.profiler.profile(activities)", profiler.profile, profile_args))
    # emit_nvtx drives CUDA's NVTX profiler state, which no target has: nothing to emit to
    s.patcher.set(torch.autograd.profiler, "emit_nvtx", _null_context_class(
        s, "torch.autograd.profiler.emit_nvtx", f"NVTX ranges are CUDA's: nothing to emit on {s.title}"))


def _null_context_class(s: Session, api: str, message: str) -> type:
    """A context-manager class that does nothing (counted as a no-op when entered)."""
    def __init__(self, *args, **kwargs):
        pass

    def __enter__(self):
        s.count(api, "noop", message)
        return self

    def __exit__(self, *exc):
        return False

    return type(api.rsplit(".", 1)[-1], (), {"__init__": __init__, "__enter__": __enter__, "__exit__": __exit__,
                                             "__module__": "torchport.runtime", "__doc__": f"{api}: {message}"})


def patch_random(s: Session) -> None:
    """torch.random.fork_rng(devices=[0]) forks the target's generators (on a host target: the CPU's,
    which fork_rng always forks)."""
    torch = s.torch
    original = torch.random.fork_rng

    @functools.wraps(original)
    def fork_rng(devices=None, enabled=True, _caller="fork_rng", _devices_kw="devices", device_type=None):
        if device_type in (None, "cuda"):
            s.count("torch.random.fork_rng(devices)")
            if s.target.host:
                devices, device_type = [], "cpu"
            else:
                device_type = s.device_type
        return original(devices, enabled, _caller, _devices_kw, device_type=device_type)

    s.patcher.set(torch.random, "fork_rng", fork_rng)


def patch_data_parallel(s: Session) -> None:
    """torch.nn.DataParallel's copies (torch._C._scatter, _gather, _broadcast_coalesced...; CUDA's, which no
    other device's torch._C has): the vendor's own where it registers them in a module of its own (torch_musa:
    torch_musa._MUSAC, kb/sim/chips.toml `data_parallel`), else plain copies between the target's devices
    (sim/comm.py); each call counted.  Nothing changes where torch._C has them (CUDA, torch_npu) or on the CPU."""
    torch = s.torch
    if s.device_type == "cpu" or hasattr(torch._C, "_scatter"):
        return
    from ..sim import chips
    from ..sim.comm import functions

    copies = functions(s.device_type)
    rule = chips.vendor_rules(s.target.name).get("data_parallel") or {}
    vendor = None
    if rule.get("module") and rule["module"] != "torch._C":
        with contextlib.suppress(ImportError):
            vendor = importlib.import_module(rule["module"])
    for name, fn in copies.items():
        own = getattr(vendor, name, None) if vendor is not None else None
        s.patcher.set(torch._C, name, _counted(s, f"torch.nn.parallel.comm ({'the vendor' if own else 'torchport'}'s "
                                                  f"{name.lstrip('_')})", own or fn))


def _counted(s: Session, api: str, fn):
    @functools.wraps(fn)
    def call(*args, **kwargs):
        s.count(api, "standin")
        return fn(*args, **kwargs)
    return call


# The objects holding CUDA's math settings (allow_tf32 ...): setting one also sets the target's counterpart.
BACKEND_FLAG_HOLDERS = ("torch.backends.cuda.matmul", "torch.backends.cudnn")
BACKEND_FLAGS = ("allow_tf32", "allow_fp16_reduced_precision_reduction", "allow_bf16_reduced_precision_reduction",
                 "benchmark", "deterministic", "enabled")


def patch_backend_flags(s: Session) -> None:
    """`torch.backends.cuda.matmul.allow_tf32 = True` and `torch.backends.cudnn.allow_tf32 = ...`: the target data's
    counterpart is set too (torch.npu.matmul.allow_hf32, torch.backends.mlu.matmul.allow_tf32 ...) and counted, so
    the math mode the script (or a library it calls: accelerate's tf32) asked for is the one the target runs; a
    setting with no counterpart changes nothing on the target and is counted as such (a no-op)."""
    api_map = ApiMap(s.target)
    for holder_name in BACKEND_FLAG_HOLDERS:
        holder = s.torch
        for part in holder_name.split(".")[1:]:
            holder = getattr(holder, part, None)
        if holder is None:
            continue
        plan = {}
        for flag in BACKEND_FLAGS:
            r = api_map.resolve(f"{holder_name}.{flag}")
            plan[flag] = r.new if r is not None and r.kind == MAP else None
        base = type(holder)

        def __setattr__(self, name, value, _plan=plan, _base=base, _holder=holder_name):
            _base.__setattr__(self, name, value)
            if name not in _plan or kind_of_file(sys._getframe(1).f_code.co_filename) == "torch":
                return   # torch's own code (torch.backends.cudnn.flags) keeps to CUDA's settings
            new = _plan[name]
            if new is None:
                s.count(f"{_holder}.{name} (set)", "noop", f"{_holder}.{name} has no counterpart on {s.title}")
                return
            owner_path, leaf = new.rsplit(".", 1)
            owner = s.torch
            for part in owner_path.split(".")[1:]:
                owner = getattr(owner, part, None)
            if owner is None:
                s.count(f"{_holder}.{name} (set)", "noop", f"{new} is not in the installed {s.target.namespace}")
                return
            setattr(owner, leaf, value)
            s.count(f"{_holder}.{name} (set)", "redirected", f"also sets {new}")

        s.patcher.set_class(holder, type(base.__name__, (base,), {"__setattr__": __setattr__,
                                                                 "__module__": base.__module__}))


PATCHES = (patch_namespace, patch_factories, patch_device_types, patch_tensor, patch_module, patch_load,
           patch_distributed, patch_data_parallel, patch_amp, patch_profiler, patch_random, patch_backend_flags)


def apply_all(s: Session) -> None:
    for patch in PATCHES:
        patch(s)
