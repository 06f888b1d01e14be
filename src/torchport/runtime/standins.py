"""Stand-ins: what a `torch.cuda` name becomes when the target has no counterpart that does the job.

Two tables, both keyed by the CUDA name:

- `NEUTRAL`: calls that only observe (memory statistics, device name and properties, capability,
  utilization, NVTX ranges).  On a target without the API they return an honest neutral value of
  the type CUDA returns: 0 bytes for counters the target does not keep, the host's memory for
  `mem_get_info`, `(0, 0)` for a capability that is not a CUDA architecture, a properties object
  with the fields scripts read.  Each warns once and is counted as a stand-in in the run report;
  `--on-missing raise` turns them back into failures.
- `WORKING`: names whose stand-in does what CUDA code asks, on a host target (torch.cpu's Event
  cannot time and its Stream cannot synchronize) or where the target lacks them (legacy tensor
  types, the per-device random-state lists).  They are counted as redirected.

Each entry is `name -> factory(ctx)` returning the object; `ctx` is a `Host` (below), so the
factories stay small and need no session internals.
"""
from __future__ import annotations

import collections
import contextlib
import os
import platform
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Optional

if TYPE_CHECKING:
    from ..backends import RuntimeSettings


# ------------------------------------------------------------------ what the stand-ins may ask
class Host:
    """What a stand-in needs to know: torch, the target's device type and title, and its data."""

    def __init__(self, torch, device_type: str, title: str, runtime: RuntimeSettings, host: bool):
        self.torch, self.device_type, self.title, self.runtime, self.host = torch, device_type, title, runtime, host
        self._stream = None

    def memory(self) -> tuple:
        """(free, total) bytes of the host's memory."""
        try:
            page = os.sysconf("SC_PAGE_SIZE")
            return os.sysconf("SC_AVPHYS_PAGES") * page, os.sysconf("SC_PHYS_PAGES") * page
        except (ValueError, OSError, AttributeError):  # pragma: no cover - not a POSIX host
            return 0, 0

    def device_name(self) -> str:
        if not self.host:
            return self.title
        try:
            with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
                for line in f:
                    if line.startswith("model name"):
                        return line.split(":", 1)[1].strip()
        except OSError:
            pass
        return platform.processor() or "CPU"

    def stream(self):
        if self._stream is None:
            self._stream = host_stream_class(self)()
        return self._stream


@dataclass(frozen=True)
class DeviceProperties:
    """What `torch.cuda.get_device_properties` returns, with the fields scripts read; on a target
    without the API: the host's name and memory, capability 0.0 (not a CUDA architecture)."""

    name: str
    total_memory: int
    major: int = 0
    minor: int = 0
    multi_processor_count: int = 0
    is_integrated: bool = False
    is_multi_gpu_board: bool = False
    L2_cache_size: int = 0
    max_threads_per_multi_processor: int = 0
    warp_size: int = 0
    uuid: str = ""
    gcnArchName: str = ""


def _properties(ctx: Host):
    def get_device_properties(device=None):
        return DeviceProperties(name=ctx.device_name(), total_memory=ctx.memory()[1],
                                multi_processor_count=(os.cpu_count() or 1) if ctx.host else 0,
                                is_integrated=ctx.host)
    return get_device_properties


def _value(value) -> Callable:
    """A function taking CUDA's arguments (a device, mostly) and returning `value`."""
    def standin(*args, **kwargs):
        return value() if callable(value) else value
    return lambda ctx: standin


def _nvtx_range(ctx: Host):
    def null_context(*args, **kwargs):
        return contextlib.nullcontext()
    return null_context


def _summary(ctx: Host):
    def memory_summary(device=None, abbreviated=False):
        return f"torchport: {ctx.title} keeps no device memory statistics (torch.cuda.memory_summary stand-in)\n"
    return memory_summary


def _bf16(ctx: Host):
    answer = ctx.runtime.bf16

    def is_bf16_supported(including_emulation=True):
        return answer
    return is_bf16_supported


def _zero_stats(ctx: Host):
    def memory_stats(device=None):
        return collections.defaultdict(int)
    return memory_stats


_COUNTERS = ("memory_allocated", "max_memory_allocated", "memory_reserved", "max_memory_reserved",
             "memory_cached", "max_memory_cached", "device_memory_used", "memory_usage", "utilization",
             "temperature", "power_draw", "clock_rate", "get_sync_debug_mode")
_RESETS = ("reset_peak_memory_stats", "reset_max_memory_allocated", "reset_max_memory_cached",
           "reset_accumulated_memory_stats", "reset_peak_host_memory_stats", "reset_accumulated_host_memory_stats",
           "set_per_process_memory_fraction", "set_sync_debug_mode", "init", "set_stream")
_FALSE = ("is_tf32_supported", "is_current_stream_capturing", "can_device_access_peer")

NEUTRAL: dict = {
    **{f"torch.cuda.{n}": _value(0) for n in _COUNTERS},
    **{f"torch.cuda.{n}": _value(None) for n in _RESETS},
    **{f"torch.cuda.{n}": _value(False) for n in _FALSE},
    "torch.cuda.get_per_process_memory_fraction": _value(1.0),
    "torch.cuda.host_memory_stats": _zero_stats,
    "torch.cuda.memory_stats_as_nested_dict": _value(dict),
    "torch.cuda.memory_snapshot": _value(list),
    "torch.cuda.list_gpu_processes": _value(lambda: "no device processes (torchport stand-in)"),
    "torch.cuda.device_of": _nvtx_range,
    "torch.cuda.mem_get_info": lambda ctx: _value(ctx.memory)(ctx),
    "torch.cuda.memory_stats": _zero_stats,
    "torch.cuda.memory_summary": _summary,
    "torch.cuda.get_device_name": lambda ctx: _value(ctx.device_name)(ctx),
    "torch.cuda.get_device_properties": _properties,
    "torch.cuda.get_device_capability": _value((0, 0)),
    "torch.cuda.is_bf16_supported": _bf16,
    "torch.cuda.get_arch_list": _value(list),
    "torch.cuda.nvtx.range_push": _value(0),
    "torch.cuda.nvtx.range_pop": _value(0),
    "torch.cuda.nvtx.range_start": _value(0),
    "torch.cuda.nvtx.range_end": _value(None),
    "torch.cuda.nvtx.mark": _value(None),
    "torch.cuda.nvtx.range": _nvtx_range,
    # cudaProfilerStart/Stop switch an attached NVIDIA profiler (nsys, ncu) on and off: no target has one
    "torch.cuda.profiler.start": _value(None),
    "torch.cuda.profiler.stop": _value(None),
    "torch.cuda.profiler.profile": _nvtx_range,
}

# What each neutral value is, for the warning and the report.
NEUTRAL_MEANING = {
    "torch.cuda.mem_get_info": "the host's free and total memory",
    "torch.cuda.memory_stats": "an empty statistics dict (every key reads 0)",
    "torch.cuda.memory_summary": "a one-line summary saying there are no statistics",
    "torch.cuda.get_device_name": "the host's name",
    "torch.cuda.get_device_properties": "the host's name and memory, capability 0.0",
    "torch.cuda.get_device_capability": "(0, 0): not a CUDA architecture",
    "torch.cuda.is_bf16_supported": "the target data's answer",
    "torch.cuda.get_arch_list": "[]",
    "torch.cuda.nvtx.range": "a null context",
    "torch.cuda.profiler.profile": "a null context: the NVIDIA profiler it switches on is not there",
}


def meaning(api: str) -> str:
    if api in NEUTRAL_MEANING:
        return NEUTRAL_MEANING[api]
    short = api.rsplit(".", 1)[-1]
    if short in _RESETS or short in ("range_end", "mark"):
        return "None: nothing to set, reset or mark"
    if api.startswith("torch.cuda.profiler."):
        return "None: no NVIDIA profiler to switch on or off"
    if short in _FALSE:
        return "False"
    if short == "device_of":
        return "a null context"
    return "0" if short in _COUNTERS or short.startswith("range_") else "an empty value"


# ------------------------------------------------------------------ working stand-ins
def host_event_class(ctx: Host):
    """torch.cuda.Event on the host: record() notes the wall clock (host work is synchronous, so
    the time between two records is the time the work took); elapsed_time() in milliseconds."""
    class Event:
        def __init__(self, enable_timing=False, blocking=False, interprocess=False, **kwargs):
            self.enable_timing, self._at = enable_timing, None

        def record(self, stream=None):
            self._at = time.perf_counter()

        def elapsed_time(self, end_event) -> float:
            if not (self.enable_timing and end_event.enable_timing):
                raise RuntimeError("Both events must be created with argument 'enable_timing=True'.")
            if self._at is None or end_event._at is None:
                raise RuntimeError("Both events must be recorded before calculating elapsed time.")
            return (end_event._at - self._at) * 1000.0

        def synchronize(self):
            return None

        def query(self) -> bool:
            return True

        def wait(self, stream=None):
            return None

        def __repr__(self):
            return f"<torch.cuda.Event on {ctx.title} (torchport host event)>"

    return Event


def host_stream_class(ctx: Host):
    """torch.cuda.Stream on the host: a torch.Stream of the CPU that is also its own `with` context.
    Host work is synchronous, so waiting on another stream or event has nothing to wait for."""
    stream_base: Any = ctx.torch.Stream   # the running torch's class, known only at run time

    class Stream(stream_base):
        def __new__(cls, device=None, priority=0, **kwargs):
            return super().__new__(cls, "cpu")

        def wait_stream(self, stream):
            return None

        def wait_event(self, event):
            return None

        def record_event(self, event=None):
            event = event if event is not None else host_event_class(ctx)()
            event.record(self)
            return event

        def __enter__(self):
            return self

        def __exit__(self, *exc):
            return False

    return Stream


def _current_stream(ctx: Host):
    def current_stream(device=None):
        return ctx.stream()
    return current_stream


def _stream_context(ctx: Host):
    def stream(stream=None):
        return contextlib.nullcontext(stream)
    return stream


LEGACY_TYPES = {"FloatTensor": "float32", "DoubleTensor": "float64", "HalfTensor": "float16",
                "BFloat16Tensor": "bfloat16", "ByteTensor": "uint8", "CharTensor": "int8", "ShortTensor": "int16",
                "IntTensor": "int32", "LongTensor": "int64", "BoolTensor": "bool"}


def legacy_dtype(torch, name: str):
    """The dtype of a legacy type name ("torch.cuda.FloatTensor", "FloatTensor"), or None."""
    dtype = LEGACY_TYPES.get(name.rsplit(".", 1)[-1])
    return getattr(torch, dtype) if dtype else None


def legacy_type_class(ctx: Host, name: str):
    """torch.cuda.<X>Tensor where the target has none: calling it builds a tensor of that dtype on the
    target device (like torch.<X>Tensor(...) moved there); isinstance checks dtype and device."""
    torch = ctx.torch
    dtype = legacy_dtype(torch, name)
    host_type = getattr(torch, name)

    class Meta(type):
        def __call__(cls, *args, **kwargs):
            return host_type(*args, **kwargs).to(ctx.device_type)

        def __instancecheck__(cls, obj):
            return isinstance(obj, torch.Tensor) and obj.dtype == dtype and obj.device.type == ctx.device_type

    return Meta(name, (), {"__module__": "torch.cuda", "__torchport_dtype__": dtype,
                           "__doc__": f"torch.cuda.{name} on {ctx.title} (torchport): {dtype} tensors there"})


def _rng_all(ctx: Host, setter: bool):
    torch = ctx.torch
    namespace = getattr(torch, ctx.device_type, None)
    get = getattr(namespace, "get_rng_state", None) if not ctx.host else None
    get = get or torch.get_rng_state
    put = (getattr(namespace, "set_rng_state", None) if not ctx.host else None) or torch.set_rng_state

    def get_rng_state_all():
        return [get()]

    def set_rng_state_all(new_states):
        for state in list(new_states)[:1]:
            put(state)

    return set_rng_state_all if setter else get_rng_state_all


def _device_index(ctx: Host):
    def current_device():
        return 0  # CUDA answers an index, which code formats into "cuda:{i}" (torch.cpu answers "cpu")
    return current_device


# Host-only: used on a host target even where the target data maps the name (torch.cpu's cannot do it).
HOST: dict = {
    "torch.cuda.current_device": _device_index,
    "torch.cuda.Event": host_event_class,
    "torch.cuda.Stream": host_stream_class,
    "torch.cuda.current_stream": _current_stream,
    "torch.cuda.default_stream": _current_stream,
    "torch.cuda.stream": _stream_context,
}

def _graphed(ctx: Host):
    def make_graphed_callables(callables, sample_args, *args, **kwargs):
        return callables  # a CUDA graph replays the same computation: without graphs, the callables run as they are
    return make_graphed_callables


WORKING: dict = {
    **HOST,
    "torch.cuda.make_graphed_callables": _graphed,
    **{f"torch.cuda.{n}": (lambda ctx, n=n: legacy_type_class(ctx, n)) for n in LEGACY_TYPES},
    "torch.cuda.get_rng_state_all": lambda ctx: _rng_all(ctx, False),
    "torch.cuda.set_rng_state_all": lambda ctx: _rng_all(ctx, True),
}


def canonical(api: str) -> str:
    """torch.cuda.random.X / torch.cuda.memory.X -> torch.cuda.X (the same functions, re-exported)."""
    head, _, name = api.rpartition(".")
    return f"torch.cuda.{name}" if head in ("torch.cuda.random", "torch.cuda.memory") else api


def working(ctx: Host, api: str, target_has: bool) -> Optional[object]:
    """The working stand-in for `api`, or None: host overrides always apply on a host target; the
    others only where the target lacks the name."""
    api = canonical(api)
    if api in HOST and ctx.host:
        return HOST[api](ctx)
    if api in WORKING and api not in HOST and not target_has:
        return WORKING[api](ctx)
    return None
