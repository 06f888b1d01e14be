"""A torch.profiler wrapper with the target's activities and a wait/warmup/active schedule, and the
files it writes into its folder when the active steps are done:

    trace.json    Chrome trace (chrome://tracing, Perfetto)
    ops.csv       per op: calls, host time total/self, device time total/self (when a device is
                  profiled), the most frequent input shapes, self memory
    summary.md    top ops, step times, host-bound vs device-bound estimate, data-loader wait, the
                  copy/format share of op time and the ops whose input shapes vary across steps
                  (advice.py)
    profile.json  all of it, for `torchport profile diff`

While it runs, every DataLoader batch (`__next__` of torch's DataLoader iterators) is timed, per step:
a profile whose steps spend DATA_BOUND or more of their time there is called data-loading bound.
A script that ends during the active steps, after at least one of them, is reported with the steps it
ran (the last one partial); one that ends during its first (waited) step is profiled whole, as one window
(`whole_run`); one that ends later, before a profiled step, is not reported (`result` stays None).

    with Profiler("prof", target="npu", active=3) as p:
        for batch in loader:
            train_step(batch); p.step()
"""
from __future__ import annotations

import json
import statistics
import time
from collections import Counter
from pathlib import Path
from typing import Optional, cast

import torch
from torch.profiler import ProfilerAction, ProfilerActivity, profile, schedule

from ..core import writes
from ..core.csvfile import write_csv
from ..core.names import md_cell
from . import advice

SCHEMA_VERSION = 1
DATA_BOUND = 0.5    # share of a step spent waiting for DataLoader batches from which a step is data-loading bound


def activities_for(target: Optional[str]) -> tuple:
    """(activities, device name or None): CPU always, plus the target's device activity when this
    machine has it (decided by the target data, like `convert` and `run`)."""
    acts = [ProfilerActivity.CPU]
    from .. import sim

    if sim.active() is not None:   # a simulated device runs its kernels on the host: there is no device timing
        return tuple(acts), None
    supported = torch.profiler.supported_activities()
    device = None
    if target in (None, "cuda") and torch.cuda.is_available():
        acts.append(ProfilerActivity.CUDA)
        device = "cuda"
    elif target and target not in ("cpu", "cuda"):
        from ..backends import load_target
        from ..kb.apimap import MAP, ApiMap

        t = load_target(target)
        r = ApiMap(t).resolve("torch.profiler.ProfilerActivity.CUDA")
        name = r.new.rsplit(".", 1)[-1] if r is not None and r.kind == MAP else "PrivateUse1"
        activity = getattr(ProfilerActivity, name, None)
        if activity is not None and activity in supported:
            acts.append(activity)
            device = t.device or name.lower()
    return tuple(acts), device


class Profiler:
    def __init__(self, output_dir, *, target: Optional[str] = None, wait: int = 1, warmup: int = 1,
                 active: int = 3, record_shapes: bool = True, profile_memory: bool = True):
        self.folder = Path(output_dir)
        self.target = target
        self.wait, self.warmup, self.active = wait, warmup, active
        self.activities, self.device = activities_for(target)
        from .. import sim

        self.simulated = sim.active() is not None
        self.record_shapes = record_shapes
        planned = schedule(wait=wait, warmup=warmup, active=active, repeat=1)

        def plan(step: int) -> ProfilerAction:
            # the first (waited) step is recorded all the same: a script that ends in it (a short inference
            # run) is then profiled whole, as one window; one that goes on has that recording dropped (_ready)
            return ProfilerAction.RECORD_AND_SAVE if step == 0 and wait > 0 else planned(step)

        self._prof = profile(activities=list(self.activities), record_shapes=record_shapes,
                             profile_memory=profile_memory, schedule=plan, on_trace_ready=self._ready)
        self.whole_run = False           # the script ended in its first step: the whole run is the profile
        self.whole_run_ok = lambda: True  # whether that may be the profile (steps.StepClock: no step was chosen)
        self._started = 0.0
        self.steps = 0
        self.step_times: list = []       # wall seconds of each profiled step
        self.loader_times: list = []     # of which waiting for DataLoader batches
        self.step_by = "Profiler.step() call"  # what one step is, for the summary
        self.on_batch = None             # called after each DataLoader batch (torchport profile's window clock)
        self.partial = False             # the last profiled step was cut short by the end of the script
        self._last: Optional[float] = None   # when the step under way began (set by __enter__)
        self._loader = 0.0
        self._next = None
        self.done = False
        self.result: Optional[dict] = None
        self.why_empty: Optional[str] = None  # when result is None after a run: why (set by profile_script)

    @property
    def total_steps(self) -> int:
        return self.wait + self.warmup + self.active

    @property
    def recording(self) -> bool:
        """Whether the step under way is one of the active (profiled) steps."""
        return self.wait + self.warmup <= self.steps < self.total_steps and not self.done

    def __enter__(self):
        self.folder.mkdir(parents=True, exist_ok=True)
        self._time_batches()
        self._prof.__enter__()
        self._last = self._started = time.perf_counter()
        return self

    def step(self) -> None:
        now = time.perf_counter()
        if self.recording:
            self.step_times.append(now - cast(float, self._last))   # entered: set
            self.loader_times.append(self._loader)
        self._last, self._loader = now, 0.0
        self.steps += 1
        if not self.done:
            self._prof.step()

    def __exit__(self, *exc):
        self._untime_batches()
        if self.recording and self.step_times:  # the script ended during an active step: it counts, marked partial
            self.step_times.append(time.perf_counter() - self._last)
            self.loader_times.append(self._loader)
            self.partial = True
        elif self.recording:  # not one whole profiled step: nothing to report
            self.done = True
        self._prof.__exit__(*exc)  # torch reports the trace when it stops during the active steps
        if not self.done and self.partial and exc[0] is None:
            self._ready(self._prof)
        return False

    def _time_batches(self) -> None:
        """Time every DataLoader batch while the profiler runs (torch's iterators share this __next__)."""
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        original = self._next = _BaseDataLoaderIter.__dict__["__next__"]
        profiler = self

        def __next__(iterator):
            start = time.perf_counter()
            try:
                return original(iterator)
            finally:
                profiler._loader += time.perf_counter() - start
                if profiler.on_batch is not None:
                    profiler.on_batch()

        __next__.__wrapped__ = original  # type: ignore[attr-defined]  # functools.wraps' marker, set by hand
        _BaseDataLoaderIter.__next__ = __next__  # type: ignore[method-assign]  # patching torch while profiling

    def _untime_batches(self) -> None:
        from torch.utils.data.dataloader import _BaseDataLoaderIter

        if self._next is not None:
            _BaseDataLoaderIter.__next__, self._next = self._next, None

    # ----------------------------------------------------------------- outputs
    def _ready(self, prof) -> None:
        if self.done:
            return
        if self.wait > 0 and self.steps >= 1 and not self.step_times:
            return   # the first step's recording (see `plan`): the script went on, so it is not the profile
        if self.wait > 0 and self.steps == 0 and not self.whole_run_ok():
            return   # a step was asked for (--step-fn) or the script trains: profiling its start would mislead
        if self.wait > 0 and self.steps == 0:   # the script ended in its first step: the whole run, one window
            self.whole_run = True
            self.step_times = [time.perf_counter() - self._started]
            self.loader_times = [self._loader]
            self.step_by = "whole run"
        self.done = True
        prof.export_chrome_trace(str(self.folder / "trace.json"))
        self.result = summarize(prof, self)
        write_outputs(self.result, self.folder)


def summarize(prof, p: Profiler) -> dict:
    shapes: dict = {}
    for e in prof.key_averages(group_by_input_shape=True):
        if e.input_shapes:
            shapes.setdefault(e.key, Counter())[str(e.input_shapes)] += e.count
    ops = []
    for e in prof.key_averages():
        if e.key.startswith("ProfilerStep"):  # the step ranges themselves: reported as step times
            continue
        ops.append({"op": e.key, "calls": e.count, "host_total_us": round(e.cpu_time_total, 3),
                    "host_self_us": round(e.self_cpu_time_total, 3),
                    "device_total_us": round(e.device_time_total, 3), "device_self_us": round(e.self_device_time_total, 3),
                    "self_cpu_memory_bytes": e.self_cpu_memory_usage,
                    "self_device_memory_bytes": e.self_device_memory_usage,
                    "input_shapes": [s for s, _ in shapes.get(e.key, Counter()).most_common(3)]})
    ops.sort(key=lambda o: -(o["host_self_us"] + o["device_self_us"]))
    events, ranges = advice.records(prof)
    step_events = [x.time_range.elapsed_us() for x in prof.events() if x.name.startswith("ProfilerStep")]
    steps = len(p.step_times) or len(step_events) or 1
    profiled_step_us = statistics.mean(step_events) if step_events else 0.0
    wall_step_us = statistics.mean(p.step_times) * 1e6 if p.step_times else profiled_step_us
    device_self = sum(o["device_self_us"] for o in ops)
    host_ops = sum(o["host_self_us"] for o in ops if o["op"].startswith("aten::"))
    busy = device_self / steps / wall_step_us if wall_step_us and device_self else 0.0
    loader_us = sum(p.loader_times) * 1e6
    loader_share = sum(p.loader_times) / sum(p.step_times) if sum(p.step_times) > 0 else 0.0
    step_shares = [round(d / t, 4) if t > 0 else 0.0 for d, t in zip(p.loader_times, p.step_times)]
    if loader_share >= DATA_BOUND:
        # the share as profile.json holds it (rounded to 4 places), so the words and the file never differ by a
        # rounding (0.98504 read 99% here and 98% from the file)
        bound = (f"data-loading bound: {round(loader_share, 4):.0%} of the profiled step time waits for DataLoader "
                 "batches (dataset __getitem__, collate, workers)")
    elif p.device is None and p.simulated:
        bound = ("host only: the device is simulated on the CPU, so its kernels ran on the host and there is no "
                 "device timing (profile on the hardware for a device-bound or host-bound verdict)")
    elif p.device is None:
        bound = "host only: no device activity was profiled (CPU target, or no device on this machine)"
    elif busy < 0.5:
        bound = f"host-bound: the device is busy {busy:.0%} of each step; the rest is Python, launches and waits"
    else:
        bound = f"device-bound: the device is busy {busy:.0%} of each step"
    from ..core.version import __version__

    return {"schema_version": SCHEMA_VERSION, "tool": {"name": "torchport", "version": __version__},
            "torch": torch.__version__, "target": p.target or "this machine", "device": p.device, "simulated": p.simulated,
            "activities": [str(a).split(".")[-1] for a in p.activities],
            "schedule": {"wait": p.wait, "warmup": p.warmup, "active": p.active},
            "steps": {"profiled": steps, "step_by": p.step_by, "last_partial": p.partial,
                      "profiled_step_us": round(profiled_step_us, 3),
                      "wall_step_us": [round(t * 1e6, 3) for t in p.step_times],
                      "mean_wall_step_us": round(wall_step_us, 3),
                      "dataloader_share": step_shares,
                      "data_loading_bound": [i + 1 for i, x in enumerate(step_shares) if x >= DATA_BOUND]},
            "totals": {"host_self_us": round(sum(o["host_self_us"] for o in ops), 3),
                       "aten_host_self_us": round(host_ops, 3), "device_self_us": round(device_self, 3),
                       "dataloader_us": round(loader_us, 3), "dataloader_share": round(loader_share, 4),
                       "device_busy_share": round(busy, 4)},
            "data_loading_bound": loader_share >= DATA_BOUND, "bound": bound,
            "copy_format": advice.copy_format(events, p.device is not None),
            "varying_shapes": advice.varying_shapes(events, ranges, partial=p.partial, recorded=p.record_shapes),
            "ops": ops}


OPS_COLUMNS = ("op", "calls", "host_total_us", "host_self_us", "device_total_us", "device_self_us",
               "self_cpu_memory_bytes", "self_device_memory_bytes", "input_shapes")


def write_outputs(result: dict, folder: Path) -> None:
    writes.write_text(folder / "profile.json", json.dumps(result, indent=1) + "\n")
    write_csv(folder / "ops.csv", OPS_COLUMNS,
              ([o[c] if c != "input_shapes" else "; ".join(o[c]) for c in OPS_COLUMNS] for o in result["ops"]))
    writes.write_text(folder / "summary.md", markdown(result))


def markdown(r: dict, top: int = 25) -> str:
    s, t = r["steps"], r["totals"]
    partial = " (the last one partial: the script ended)" if s["last_partial"] else ""
    dominated = ", ".join(map(str, s["data_loading_bound"]))
    dominated = f"; dominated by data loading (>= {DATA_BOUND:.0%}): step {dominated}" if dominated else ""
    lines = [f"# torchport profile: {r['target']}", "",
             f"- torch {r['torch']}; activities: {', '.join(r['activities'])}; schedule: wait {r['schedule']['wait']}, "
             f"warmup {r['schedule']['warmup']}, active {r['schedule']['active']}",
             ("- profiled: the whole run as one window (the script ended before its first step ended)"
              if s["step_by"] == "whole run" else f"- profiled steps: {s['profiled']}{partial}; one step = one {s['step_by']}"),
             f"- mean step: {s['mean_wall_step_us'] / 1e3:.2f} ms wall, "
             f"{s['profiled_step_us'] / 1e3:.2f} ms in the profiler's step ranges",
             f"- step times (ms): {', '.join(f'{x / 1e3:.2f}' for x in s['wall_step_us'])}",
             f"- {r['bound']}",
             f"- data loading: {t['dataloader_us'] / 1e3:.2f} ms waiting for DataLoader batches "
             f"({t['dataloader_share']:.0%} of the profiled step time); per step: "
             f"{', '.join(f'{x:.0%}' for x in s['dataloader_share'])}{dominated}",
             f"- {advice.copy_line(r['copy_format'])}",
             f"- {advice.shapes_line(r['varying_shapes'])}", "",
             f"## Top ops (of {len(r['ops'])}), by self time", "",
             "| op | calls | host total (us) | host self (us) | device self (us) | input shapes |", "|---|---|---|---|---|---|"]
    for o in r["ops"][:top]:
        lines.append(f"| {o['op']} | {o['calls']} | {o['host_total_us']:.1f} | {o['host_self_us']:.1f} | "
                     f"{o['device_self_us']:.1f} | {'; '.join(o['input_shapes'][:2])} |")
    return "\n".join(lines + shapes_table(r["varying_shapes"])) + "\n"


def shapes_table(v: dict) -> list:
    lines = ["", "## Ops whose input shapes vary across steps", ""]
    if v["note"]:
        return lines + [f"Unknown: {v['note']}."]
    if not v["ops"]:
        return lines + [f"None: every op called in two or more of the {v['steps_compared']} whole steps had the "
                        "same input shapes in each."]
    lines += ["A graph-compiling target (Ascend) compiles an op again for each new input shape: pad or bucket "
              "the inputs to a few fixed shapes.", "",
              "| op | distinct shapes | examples | steps | host self (us) |", "|---|---|---|---|---|"]
    for o in v["ops"]:
        lines.append(f"| {md_cell(o['op'])} | {o['signatures']} | {md_cell('; '.join(o['examples']))} | "
                     f"{', '.join(map(str, o['steps']))} | {o['host_self_us']:.1f} |")
    if v["more"]:
        lines.append(f"\n({v['more']} more ops vary: see profile.json, varying_shapes)")
    return lines
