"""The simulated vendor namespace (`torch.npu`, `torch.mlu`, `torch.musa`): the vendor's API surface.

Which names exist comes from the target's API list in the knowledge base (kb/api/<target>.json):
a name the vendor has and the simulator models is a working function; a name the vendor has and
the simulator does not model raises `NotModelled` when used; a name the vendor lacks does not exist
(AttributeError, as on the real package).  The device (name, properties, capability, bf16 support) is the
chip of kb/sim/chips.toml (sim/chips.py); memory statistics come from the simulator's model of the vendor's
caching allocator (csrc/simdevice.cpp: blocks in segments, freed blocks stay reserved until empty_cache);
the vendor's setting calls are checked and recorded, with no effect; streams and events are torch.Stream and
torch.Event on the simulated device (work is synchronous; events time what ran between them).
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re
import sys
import types
import warnings
from typing import Any, Optional

import torch

from ..backends import KB_API


class NotModelled(RuntimeError):
    """A vendor API that exists on the real device but is not modelled by the simulator."""


class _Unmodelled:
    """Stands for a vendor name the simulator does not model: exists, fails when used."""

    def __init__(self, qualname: str, children=frozenset()):
        self._qualname = qualname
        self._children = children

    def _fail(self):
        raise NotModelled(f"{self._qualname} exists on the real device but is not modelled by the torchport "
                          f"simulator: run this part on the hardware, or avoid it in simulated runs")

    def __call__(self, *args, **kwargs):
        self._fail()

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if self._children and name not in self._children:
            raise AttributeError(f"module '{self._qualname}' has no attribute '{name}'")
        return _Unmodelled(f"{self._qualname}.{name}")

    def __repr__(self):
        return f"<{self._qualname}: not modelled by the torchport simulator>"


class _Reexports(_Unmodelled):
    """A vendor submodule that re-exports top-level functions (`torch.npu.random.get_rng_state_all`
    is `torch.npu.get_rng_state_all`): modelled names come from the parent, the rest are unmodelled."""

    def __init__(self, qualname: str, children, parent: types.ModuleType):
        super().__init__(qualname, children)
        self._parent = parent

    def __getattr__(self, name):
        value = self._parent.__dict__.get(name)
        if value is not None and not name.startswith("_"):
            return value
        return super().__getattr__(name)


# submodules whose functions are the namespace's own (torch.npu.utils.get_soc_version is torch.npu.get_soc_version;
# torch.mlu.cncl.is_cncl_available is torch.mlu.is_cncl_available: torch_mlu/mlu/__init__.py:48 `from .cncl import *`)
REEXPORTING = ("random", "memory", "utils", "npu_config", "autocast_utils", "streams", "graphs", "musa_graph", "cncl")


class VendorModule(types.ModuleType):
    """A module whose missing attributes are answered from the vendor's API list."""

    def __init__(self, name: str, listed=frozenset(), submodules=None, source: str = ""):
        super().__init__(name)
        self._listed = frozenset(listed)
        self._submodules = dict(submodules or {})
        self._source = source

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        if name in self._submodules:
            if name in REEXPORTING:
                return _Reexports(f"{self.__name__}.{name}", self._submodules[name], self)
            return _Unmodelled(f"{self.__name__}.{name}", self._submodules[name])
        if name in self._listed:
            return _Unmodelled(f"{self.__name__}.{name}")
        raise AttributeError(f"module '{self.__name__}' has no attribute '{name}' "
                             f"(not in the vendor's API list, {self._source})")

    def __dir__(self):
        return sorted(set(super().__dir__()) | self._listed | set(self._submodules))


class SimulatedDeviceProperties:
    """What get_device_properties returns: the fields the vendor's binding exposes, with the simulated chip's
    values (kb/sim/chips.toml); `name` says it is simulated.  A field the vendor lacks is an AttributeError."""

    def __init__(self, fields: dict):
        self.__dict__.update(fields)

    def __repr__(self):
        return "SimulatedDeviceProperties(" + ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items()) + ")"


LEGACY_TENSOR_TYPES = {"FloatTensor": torch.float32, "DoubleTensor": torch.float64, "HalfTensor": torch.float16,
                       "BFloat16Tensor": torch.bfloat16, "ByteTensor": torch.uint8, "CharTensor": torch.int8,
                       "ShortTensor": torch.int16, "IntTensor": torch.int32, "LongTensor": torch.int64,
                       "BoolTensor": torch.bool}


class _LegacyTensorType(type):
    """isinstance(x, torch.npu.FloatTensor): a tensor of that dtype on the device."""

    def __instancecheck__(cls, obj):
        return isinstance(obj, torch.Tensor) and obj.device.type == cls.device_type and obj.dtype == cls.dtype


def legacy_tensor_type(namespace: str, name: str, dtype, device_type: str, index) -> type:
    """The vendor's legacy tensor type: `x.type(T)` reads its full name, as for torch.cuda's types; `T(n)`
    and `T(data)` make tensors on the current device, as the legacy constructors do."""
    def new(cls, *args):
        device = torch.device(device_type, index())
        if len(args) == 1 and not isinstance(args[0], int):
            return torch.tensor(args[0], dtype=dtype, device=device)
        return torch.empty(*args, dtype=dtype, device=device)
    cls = _LegacyTensorType(name, (), {"__new__": new, "dtype": dtype, "device_type": device_type,
                                        "__module__": namespace})
    cls.__name__ = f"{namespace}.{name}"   # the name torch's Tensor.type(T) parses
    return cls


def accept_legacy_default_types(index) -> None:
    """torch.set_default_tensor_type(torch.npu.FloatTensor) (or its name) sets the default dtype and device,
    as the vendor's package lets it; any other type resets the device and goes to torch's own function."""
    torch_function = torch.set_default_tensor_type

    def set_default_tensor_type(t):
        legacy = torch._utils._import_dotted_name(t) if isinstance(t, str) else t
        if not isinstance(legacy, _LegacyTensorType):
            torch.set_default_device(None)   # a CPU type: the default device is the CPU again
            return torch_function(t)
        torch.set_default_dtype(legacy.dtype)
        torch.set_default_device(torch.device(legacy.device_type, index()))
    set_default_tensor_type.__doc__ = torch_function.__doc__
    torch.set_default_tensor_type = set_default_tensor_type


def build(target, ext, rng_per_device: bool, chip) -> VendorModule:  # noqa: C901
    """The torch.<device> module for `target`, backed by the extension `ext`, presenting `chip` (chips.Device)."""
    device_type = target.device
    api_list = _api_list(target)
    listed = frozenset(api_list["names"]) | frozenset(api_list.get("referenced_names", ()))
    subs = {k: frozenset(v) for k, v in api_list.get("modules", {}).items()}
    mod = VendorModule(target.namespace, listed, subs, api_list.get("version", target.api_source))
    amp_dtypes = [getattr(torch, d) for d in chip.amp_dtypes()]
    label = f"{chip.name} (torchport simulated)"

    def index(device=None) -> int:
        """The device index `device` names (None: the current device), checked against the count."""
        if device is None:
            return ext.current_device()
        if isinstance(device, int):
            i = device
        else:
            d = torch.device(device)
            if d.type != device_type:
                raise ValueError(f"Expected a {device_type} device, but got: {d}")
            i = ext.current_device() if d.index is None else d.index
        if not 0 <= i < ext.device_count():
            raise RuntimeError(f"invalid device ordinal {i} (the simulated {device_type} has {ext.device_count()} "
                               f"device(s); set them with --devices)")
        return i

    def generator(device=None) -> torch.Generator:
        return ext.generator(index(device))

    f: dict[str, Any] = {}   # the modelled API: name -> object

    # device management
    f["is_available"] = lambda: ext.device_count() > 0   # none when the visible-devices variable hides them all
    f["is_initialized"] = lambda: True
    f["init"] = lambda: None
    f["device_count"] = lambda: ext.device_count()
    f["current_device"] = lambda: ext.current_device()
    f["set_device"] = lambda device: ext.set_device(index(device))
    f["synchronize"] = lambda device=None: None

    def get_device_name(device=None):
        index(device)   # validates the device
        return label

    f["get_device_name"] = get_device_name

    def get_device_properties(device=None):
        index(device)
        return SimulatedDeviceProperties({**chip.property_values(), "name": label})

    f["get_device_properties"] = get_device_properties
    f["get_device_capability"] = device_capability(chip, index)

    class device:   # noqa: N801 - the vendor's spelling
        """Context manager that changes the current device."""

        def __init__(self, device):
            self.idx = -1 if device is None else index(device)
            self.prev = -1

        def __enter__(self):
            self.prev = ext.current_device()
            if self.idx >= 0:
                ext.set_device(self.idx)

        def __exit__(self, *exc):
            ext.set_device(self.prev)
            return False

    class device_of(device):   # noqa: N801
        def __init__(self, obj):
            super().__init__(obj.get_device() if obj.device.type == device_type else None)

    f["device"], f["device_of"] = device, device_of

    # memory: the simulated caching allocator's counts (csrc/simdevice.cpp; sizes from kb/sim/chips.toml)
    def stats(device=None):
        return ext.memory_stats(index(device))

    f["memory_allocated"] = lambda device=None: stats(device)["allocated"]
    f["max_memory_allocated"] = lambda device=None: stats(device)["peak"]
    f["memory_reserved"] = lambda device=None: stats(device)["reserved"]
    f["max_memory_reserved"] = lambda device=None: stats(device)["reserved_peak"]
    f["memory_cached"], f["max_memory_cached"] = f["memory_reserved"], f["max_memory_reserved"]
    f["reset_peak_memory_stats"] = lambda device=None: ext.reset_peak(index(device))
    f["reset_max_memory_allocated"] = f["reset_peak_memory_stats"]
    f["reset_max_memory_cached"] = f["reset_peak_memory_stats"]
    f["empty_cache"] = lambda: ext.empty_cache()
    f["ipc_collect"] = lambda: None

    def mem_get_info(device=None):
        s = stats(device)
        return s["capacity"] - s["reserved"], s["capacity"]

    def memory_stats(device=None):
        s = stats(device)
        return {"allocated_bytes.all.current": s["allocated"], "allocated_bytes.all.peak": s["peak"],
                "active_bytes.all.current": s["allocated"], "active_bytes.all.peak": s["peak"],
                "reserved_bytes.all.current": s["reserved"], "reserved_bytes.all.peak": s["reserved_peak"],
                "segment.all.current": s["segments"], "segment.all.allocated": s["segments_made"],
                "allocation.all.allocated": s["allocations"],
                "allocation.all.freed": s["frees"], "num_ooms": s["oom"], "num_alloc_retries": s["retries"]}

    def memory_summary(device=None, abbreviated=False):
        s = stats(device)
        return (f"{label}: device {index(device)}, {s['allocated']} bytes allocated (peak {s['peak']}), "
                f"{s['reserved']} reserved (peak {s['reserved_peak']}), {s['allocations']} allocations, "
                f"{s['frees']} frees, {s['segments']} segments, capacity {s['capacity']} (simulated: host memory, "
                f"a model of the caching allocator's blocks and segments)")

    def set_per_process_memory_fraction(fraction, device=None):
        if not isinstance(fraction, float):
            raise TypeError("Invalid type for fraction argument, must be `float`")
        if not 0 <= fraction <= 1:
            raise ValueError(f"Invalid fraction value: {fraction}. Allowed range: 0~1")
        i = index(device)
        ext.set_memory_limit(i, int(fraction * stats(i)["capacity"]))

    f["mem_get_info"], f["memory_stats"], f["memory_summary"] = mem_get_info, memory_stats, memory_summary
    f["set_per_process_memory_fraction"] = set_per_process_memory_fraction
    f["memory_snapshot"] = lambda: ext.memory_snapshot()   # the segments, as torch_mlu/torch_musa return them
    f["is_current_stream_capturing"] = lambda: False   # graph capture is not modelled: nothing is ever captured
    f["OutOfMemoryError"] = torch.OutOfMemoryError     # torch_mlu/mlu/__init__.py:67, torch_musa/__init__.py:219

    def utilization(device=None):
        index(device)
        return 0   # no device is busy: the work ran on the host

    f["utilization"] = utilization

    # random numbers
    def manual_seed(seed):
        generator().manual_seed(int(seed))

    def manual_seed_all(seed):
        if not rng_per_device:
            torch.default_generator.manual_seed(int(seed))
            return
        for i in range(ext.device_count()):
            ext.generator(i).manual_seed(int(seed))

    def seed_all():
        s = generator().seed()
        manual_seed_all(s)

    f["manual_seed"], f["manual_seed_all"], f["seed_all"] = manual_seed, manual_seed_all, seed_all
    f["seed"] = lambda: generator().seed()
    f["initial_seed"] = lambda: generator().initial_seed()
    f["get_rng_state"] = lambda device=device_type: generator(device).get_state()
    f["set_rng_state"] = lambda new_state, device=device_type: generator(device).set_state(new_state)
    f["get_rng_state_all"] = lambda: [ext.generator(i).get_state() for i in range(ext.device_count())]

    def set_rng_state_all(new_states):
        for i, state in enumerate(new_states):
            ext.generator(i).set_state(state)

    f["set_rng_state_all"] = set_rng_state_all
    f["default_generators"] = tuple(ext.generator(i) for i in range(ext.device_count()))

    # streams and events
    # torch.Stream / torch.Event check exact types, so the vendor names make plain instances of them
    class Stream:
        """A stream of the simulated device (work runs synchronously: always idle)."""

        def __new__(cls, device=None, priority=0, **kwargs):
            return torch.Stream(device=torch.device(device_type, index(device)), priority=priority)

    class Event:
        """An event of the simulated device; with enable_timing, elapsed_time measures host time."""

        def __new__(cls, enable_timing=False, blocking=False, interprocess=False):
            return torch.Event(device=torch.device(device_type, ext.current_device()),
                               enable_timing=enable_timing, blocking=blocking, interprocess=interprocess)

    def current_stream(device=None):
        return torch.accelerator.current_stream(torch.device(device_type, index(device)))

    def default_stream(device=None):
        i = index(device)
        return torch.Stream(stream_id=0, device_index=i, device_type=current_stream(i).device_type)

    def set_stream(stream):
        if stream is not None:
            torch.accelerator.set_stream(stream)

    class StreamContext:
        def __init__(self, stream):
            self.stream, self.prev = stream, None

        def __enter__(self):
            if self.stream is not None:
                self.prev = current_stream(self.stream.device)
                torch.accelerator.set_stream(self.stream)
            return self.stream

        def __exit__(self, *exc):
            if self.prev is not None:
                torch.accelerator.set_stream(self.prev)
            return False

    f.update(Stream=Stream, Event=Event, current_stream=current_stream, default_stream=default_stream,
             set_stream=set_stream, StreamContext=StreamContext, stream=lambda stream: StreamContext(stream))

    # legacy tensor types (torch.npu.FloatTensor, ...): type tests, conversions, construction on the device
    f.update({name: legacy_tensor_type(target.namespace, name, dtype, device_type, index)
              for name, dtype in LEGACY_TENSOR_TYPES.items()})
    accept_legacy_default_types(index)

    # mixed precision
    f["get_amp_supported_dtype"] = lambda: list(amp_dtypes)
    f["is_bf16_supported"] = bf16_supported(chip)
    settings: dict[str, Any] = {}   # what the program set through the vendor's option API (read by tests and probes)
    f.update(vendor_settings(chip, settings))
    f["_torchport_settings"] = settings
    f["_is_in_bad_fork"] = lambda: False
    f["_lazy_init"] = lambda: None
    # torch_npu's and torch_mlu's module flag (torch.cuda._initialized's counterpart, kb names): as is_initialized()
    f["_initialized"] = True
    f["_is_simulated"] = True

    for name, obj in f.items():
        if name.startswith("_") or name in listed:
            setattr(mod, name, obj)
    for sub, children in subs.items():   # the vendor's profiler-marker module (mlu: cnpx): markers do nothing
        if children & set(MARKERS):
            markers = VendorModule(f"{target.namespace}.{sub}", children, source=mod._source)
            for name in children & set(MARKERS):
                setattr(markers, name, _marker)
            setattr(mod, sub, markers)
            sys.modules[markers.__name__] = markers
    capture = chip.rules.get("profiler_capture")
    if capture and capture["module"] in subs:   # torch.mlu.profiler.start/stop/profile: nothing to capture
        setattr(mod, capture["module"], _capture_module(f"{target.namespace}.{capture['module']}",
                                                        subs[capture["module"]], capture, mod._source))
        sys.modules[f"{target.namespace}.{capture['module']}"] = getattr(mod, capture["module"])
    if "amp" in subs:
        amp = _amp_module(target, subs["amp"])
        mod.amp = amp  # type: ignore[attr-defined]  # a stand-in module: its names are set at run time
        sys.modules[f"{target.namespace}.amp"] = amp
    for sub in subs:   # `import torch.npu.utils` (mmengine imports torch_npu.npu.utils) finds the submodule
        sys.modules.setdefault(f"{target.namespace}.{sub}", getattr(mod, sub))
    return mod


def _capture_module(name: str, children: frozenset, rule: dict, source: str):
    """The vendor's profiler capture switches (kb/sim/chips.toml `profiler_capture`): start/stop do nothing, the
    context manager wraps them, init raises as the vendor's does."""
    module = VendorModule(name, children, source=source)

    def switch():
        return None

    @contextlib.contextmanager
    def window():
        yield

    def init(*args, **kwargs):
        raise RuntimeError(rule["init_error"])

    for noop in rule["noop"]:
        setattr(module, noop, switch)
    setattr(module, rule["context"], window)
    if "init" in children:
        module.init = init  # type: ignore[attr-defined]  # a stand-in module: its names are set at run time
    return module


class _Config:
    """torch.npu.config: `allow_internal_format = False` is passed to the runtime as an option and not kept on the
    object (torch_npu/npu/npu_config.py:150-155), so reading it back is an AttributeError there too."""

    def __init__(self, settings: dict):
        object.__setattr__(self, "_settings", settings)

    def __setattr__(self, name, value):
        if name == "allow_internal_format":
            self._settings["ALLOW_INTERNAL_FORMAT"] = "enable" if value else "disable"


def vendor_settings(chip, settings: dict) -> dict:
    """The vendor's setting calls (npu: set_option, set_compile_mode, config, ...): accepted, checked as the vendor
    checks them (kb/sim/chips.toml [npu.set_option]), and recorded in `settings`; no effect on the simulation."""
    allowed = {k: v for k, v in chip.rules.get("set_option", {}).items() if k != "source"}

    def set_option(option):
        if not isinstance(option, dict):
            raise TypeError("npu option must be a dict.")
        for name, value in option.items():
            rule, text = allowed.get(name), str(value)
            if isinstance(rule, str):   # "low..high"
                low, high = map(int, rule.split(".."))
                ok = text.isdigit() and low <= int(text) <= high
            else:
                ok = rule is None or text in rule
            if not ok:
                raise ValueError(f"value of {name} should be in {rule} but got {value}")
            settings[name] = text

    def set_compile_mode(jit_compile=False):
        settings["jitCompile"] = "enable" if jit_compile else "disable"

    def set_mm_bmm_format_nd(is_nd=True):
        settings["MM_BMM_ND_ENABLE"] = "enable" if is_nd else "disable"

    return {"set_option": set_option, "set_compile_mode": set_compile_mode, "config": _Config(settings),
            "is_jit_compile_false": lambda: settings.get("jitCompile", "disable") == "disable",
            "set_mm_bmm_format_nd": set_mm_bmm_format_nd,
            "get_mm_bmm_format_nd": lambda: settings.get("MM_BMM_ND_ENABLE", "enable") == "enable",
            "get_soc_version": lambda: chip.chip.get("soc_version")}


def bf16_supported(chip):
    """is_bf16_supported with the vendor's signature (kb/sim/chips.toml [<target>] bf16): torch_mlu's takes no
    argument; torch_npu's and torch_musa's take including_emulation (defaults False and True)."""
    rule = chip.rules["bf16"]
    if "including_emulation" not in rule:
        return lambda: chip.bf16_supported()
    return lambda including_emulation=rule["including_emulation"]: chip.bf16_supported(including_emulation)


def device_capability(chip, index):
    """get_device_capability as the vendor answers it (kb/sim/chips.toml [<target>] capability): the chip's
    (major, minor), or, on npu, None with a warning unless TORCH_NPU_DEVICE_CAPABILITY="major.minor" is set."""
    rule = chip.rules["capability"]

    def get_device_capability(device=None):
        index(device)
        if rule.get("properties"):
            return chip.capability
        value = os.environ.get(rule["env"])
        if not value:
            warnings.warn(f"You can set the device capability via the environment variable {rule['env']}. "
                          f"{chip.rules['capability_warning']}", stacklevel=2)
            return None
        match = re.fullmatch(r"(\d+)\.(\d+)", value)
        if not match:
            warnings.warn(f"get_device_capability can't parse {rule['env']} environment variable: {value}. "
                          f"Expected format is 'major.minor' where major and minor are non-negative integers "
                          f"(e.g., '8.0').", stacklevel=2)
            return None
        warnings.warn(chip.rules["capability_warning"], stacklevel=2)
        return int(match.group(1)), int(match.group(2))

    return get_device_capability


# Names `torchport convert` writes for a target (its [names] `new` values) that are settings or
# profiler markers: in the simulator a setting is stored and has no effect (numerics are the CPU's),
# a marker does nothing.  Anything else the converter writes must exist or be NotModelled.
SETTINGS = {"allow_tf32": False, "allow_hf32": False, "enabled": True, "benchmark": False, "deterministic": False}
MARKERS = ("range_push", "range_pop", "mark", "range_start", "range_end", "range")


def provide_converted_names(target, defaults: Optional[dict] = None) -> list:
    """Create what the converter's target names need under torch.backends.* and the vendor namespace (a setting's
    value: the chip's `setting_defaults` for its full name, else SETTINGS by its last part); the names that still
    cannot be reached (for the tests: should be none)."""
    defaults = defaults or {}
    missing = []
    for name in sorted(d.value for d in target.names.values() if d.kind == "new" and d.value.startswith("torch.")):
        parts = name.split(".")
        leaf = parts[-1]
        if name.startswith((f"{target.namespace}.", "torch.backends.")) and (leaf in SETTINGS or leaf in MARKERS):
            obj = torch
            for i, part in enumerate(parts[1:-1], 1):
                nxt = getattr(obj, part, None)
                if nxt is None or isinstance(nxt, _Unmodelled):
                    qual = ".".join(parts[: i + 1])
                    nxt = sys.modules[qual] = types.ModuleType(qual, "made by the torchport simulator")
                    setattr(obj, part, nxt)
                obj = nxt
            if not hasattr(obj, leaf) or isinstance(getattr(obj, leaf), _Unmodelled):
                setattr(obj, leaf, defaults.get(name, SETTINGS.get(leaf, _marker)))
            continue
        obj = torch
        try:
            for part in parts[1:]:
                obj = getattr(obj, part)
        except AttributeError:
            missing.append(name)
    return missing


def _marker(*args, **kwargs):
    """A profiler range/mark: nothing to record on the simulated device."""
    return 0


def _amp_module(target, names) -> VendorModule:
    device_type = target.device
    mod = VendorModule(f"{target.namespace}.amp", names, source=target.api_source)

    class autocast(torch.amp.autocast):   # noqa: N801
        def __init__(self, enabled=True, dtype=torch.float16, cache_enabled=True):
            super().__init__(device_type, enabled=enabled, dtype=dtype, cache_enabled=cache_enabled)

    class GradScaler(torch.amp.GradScaler):
        def __init__(self, init_scale=2.0 ** 16, growth_factor=2.0, backoff_factor=0.5, growth_interval=2000,
                     enabled=True):
            super().__init__(device_type, init_scale=init_scale, growth_factor=growth_factor,
                             backoff_factor=backoff_factor, growth_interval=growth_interval, enabled=enabled)

    modelled = {"autocast": autocast, "GradScaler": GradScaler,
                "custom_fwd": functools.partial(torch.amp.custom_fwd, device_type=device_type),
                "custom_bwd": functools.partial(torch.amp.custom_bwd, device_type=device_type)}
    for name, obj in modelled.items():
        if name in names:
            setattr(mod, name, obj)
    return mod


def package_is_namespace(target) -> bool:
    """True where the vendor's package is its namespace (torch_musa sets torch.musa to itself, so its API list
    is read from torch_musa/__init__.py): the package's top-level names are the namespace's."""
    return _api_list(target).get("file") == f"{target.register}/__init__.py"


def _api_list(target) -> dict:
    path = KB_API / f"{target.name}.json"
    return json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"names": []}


__all__ = ["NotModelled", "VendorModule", "SimulatedDeviceProperties", "build"]
