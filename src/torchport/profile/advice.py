"""What a profile says beyond its times: the share of op time spent copying and changing layout or
format (the copy/format line), and the ops whose input shapes vary from one profiled step to the next
(a graph-compiling target such as Ascend compiles such an op again for each new shape).

`records(prof)` turns torch's events into plain `Event`s and step ranges; `copy_format` and
`varying_shapes` work on those alone, so they can be given recorded data.  The op names are data:
kb/copy_ops.toml, with its sources.
"""
from __future__ import annotations

import bisect
import re
from collections import defaultdict
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path
from typing import Optional

from ..core.words import counted

COPY_OPS = Path(__file__).resolve().parents[1] / "kb" / "copy_ops.toml"
OP_NAME = re.compile(r"\w+::\w+")   # an operator (aten::addmm, npu::npu_format_cast), not a range or autograd node
MAX_ROWS = 15                       # rows of the varying-shapes table
EXAMPLES = 3                        # shape signatures shown per row


@dataclass(frozen=True)
class Event:
    """One host event of the profile: times in us; `parent` is the index of the enclosing event."""
    name: str
    start: float
    self_us: float
    total_us: float = 0.0
    shapes: Optional[str] = None          # str(input_shapes) when shapes were recorded and it has a tensor
    parent: Optional[int] = None
    device_self_us: float = 0.0           # its own kernels
    device_total_us: float = 0.0          # with the kernels of everything it calls
    kernels: tuple = ()                   # ((name, us), ...) of its own kernels


@lru_cache(maxsize=1)
def names() -> dict:
    """kb/copy_ops.toml: host_ops and layout_ops (sets of op names), kernels (name prefixes)."""
    from ..core.tomlfile import tomllib

    data = tomllib.loads(COPY_OPS.read_text(encoding="utf-8"))
    return {"host_ops": frozenset(data["host_ops"]), "layout_ops": frozenset(data["layout_ops"]),
            "kernels": tuple(data["kernels"])}


def records(prof) -> tuple:
    """([Event], [(start, end) of each ProfilerStep range, in order]) from a torch profiler."""
    events: list = []
    steps: list = []
    index: dict = {}                    # id(torch event) -> its Event's index
    host = [e for e in prof.events() if str(e.device_type).endswith("CPU")]
    for e in host:
        if e.name.startswith("ProfilerStep"):
            steps.append((e.time_range.start, e.time_range.end))
    for e in host:
        if not e.name.startswith("ProfilerStep"):
            index[id(e)] = len(index)
    for e in host:
        if e.name.startswith("ProfilerStep"):
            continue
        parent = e.cpu_parent
        while parent is not None and id(parent) not in index:  # a step range is no op's parent
            parent = parent.cpu_parent
        shapes = e.input_shapes if any(e.input_shapes or ()) else None
        events.append(Event(e.name, e.time_range.start, e.self_cpu_time_total, e.cpu_time_total,
                            str(shapes) if shapes else None, index[id(parent)] if parent is not None else None,
                            e.self_device_time_total, e.device_time_total,
                            tuple((k.name, k.duration) for k in getattr(e, "kernels", ()))))
    return events, sorted(steps)


# ------------------------------------------------------------------ copy/format share
def _counted(events: list, i: int, kb: dict) -> bool:
    """Whether event i is a copy of the script's: a host copy op (or a layout op's aten::clone) that no
    other op encloses."""
    e = events[i]
    if e.name not in kb["host_ops"] and e.name != "aten::clone":
        return False
    parent = e.parent
    while parent is not None and not OP_NAME.fullmatch(events[parent].name):  # ranges, autograd nodes
        parent = events[parent].parent
    if e.name == "aten::clone":
        return parent is not None and events[parent].name in kb["layout_ops"]
    return parent is None or events[parent].name in kb["layout_ops"]


def copy_format(events: list, device: bool, kb: Optional[dict] = None) -> dict:
    """The share of op time in copies and layout/format changes: device time of the ops' kernels when
    a device was profiled and ran any, else host self time.  Each counted op brings everything it
    calls; the breakdown is by the counted op's name (kernels counted by name, by theirs)."""
    kb = kb or names()
    device = device and any(e.device_self_us > 0 for e in events)
    copy = [_counted(events, i, kb) for i in range(len(events))]
    inside: dict = {}                   # index -> under a copy op (already in its total)
    for start in range(len(events)):
        chain, i = [], start
        while i is not None and i not in inside:
            chain.append(i)
            i = events[i].parent
        under = i is not None and (inside[i] or copy[i])
        for j in reversed(chain):       # from the outermost down
            inside[j] = under
            under = under or copy[j]
    counted = [copy[i] and not inside[i] for i in range(len(events))]
    total = sum(e.device_self_us if device else e.self_us for e in events)
    by_op: dict = defaultdict(float)
    for i, e in enumerate(events):
        if counted[i]:
            by_op[e.name] += e.device_total_us if device else e.total_us
        elif device and not inside[i]:
            for name, us in e.kernels:
                if name.startswith(kb["kernels"]):
                    by_op[name] += us
    copy_us = sum(by_op.values())
    basis = "device time of the ops' kernels" if device else "host self time"
    if total <= 0:
        return {"basis": basis, "op_us": 0.0, "copy_us": 0.0, "share": None, "ops": [],
                "note": "no op time was recorded"}
    ops = [{"op": op, "us": round(us, 3), "share": round(us / total, 4)}
           for op, us in sorted(by_op.items(), key=lambda kv: -kv[1])]
    return {"basis": basis, "op_us": round(total, 3), "copy_us": round(copy_us, 3),
            "share": round(copy_us / total, 4), "ops": ops, "note": None}


def copy_line(c: dict) -> str:
    """'copy/format: 23.4% of op time (aten::copy_ 15.1%, aten::contiguous 8.3%)'."""
    if c["share"] is None:
        return f"copy/format: {c['note']}"
    parts = ", ".join(f"{o['op']} {o['share']:.1%}" for o in c["ops"][:4])
    return f"copy/format: {c['share']:.1%} of op time ({parts or 'no copy or format op'}; {c['basis']})"


# ------------------------------------------------------------------ input shapes across steps
def varying_shapes(events: list, steps: list, *, partial: bool = False, recorded: bool = True,
                   limit: int = MAX_ROWS) -> dict:
    """Ops called in two or more whole profiled steps whose sets of input-shape signatures are not the
    same in each (a partial last step is left out: it may lack some calls).  Each op's row: distinct
    signatures over those steps, up to EXAMPLES of them (first seen first), the steps it ran in and its
    host self time there (rows go by it, costliest first; `limit` of them, `more` says how many else)."""
    whole = steps[:-1] if partial else list(steps)
    result: dict = {"steps_compared": len(whole), "ops": [], "more": 0, "note": None}
    if not recorded:
        result["note"] = "input shapes were not recorded"
        return result
    if len(whole) < 2:
        result["note"] = f"needs at least 2 whole profiled steps (this profile has {len(whole)})"
        return result
    starts = [a for a, _ in whole]
    seen: dict = defaultdict(lambda: defaultdict(set))   # op -> step -> signatures
    first: dict = defaultdict(list)                      # op -> signatures, first seen first
    host: dict = defaultdict(float)                      # op -> host self time in those steps
    for e in sorted(events, key=lambda e: e.start):
        if e.shapes is None or not OP_NAME.fullmatch(e.name):  # autograd nodes are not compiled ops
            continue
        n = bisect.bisect_right(starts, e.start)   # the last step that began at or before the op
        if n == 0 or e.start > whole[n - 1][1]:
            continue
        step = n
        seen[e.name][step].add(e.shapes)
        host[e.name] += e.self_us
        if e.shapes not in first[e.name]:
            first[e.name].append(e.shapes)
    rows = []
    for op, per_step in seen.items():
        sets = list(per_step.values())
        if len(sets) >= 2 and any(s != sets[0] for s in sets):
            rows.append({"op": op, "signatures": len(first[op]), "examples": first[op][:EXAMPLES],
                         "steps": sorted(per_step), "host_self_us": round(host[op], 3)})
    rows.sort(key=lambda r: (-r["host_self_us"], r["op"]))   # the costly ones first
    result["ops"], result["more"] = rows[:limit], max(len(rows) - limit, 0)
    return result


def shapes_line(v: dict) -> str:
    if v["note"]:
        return f"input shapes across steps: unknown ({v['note']})"
    if not v["ops"]:
        return f"input shapes across steps: none vary ({counted(v['steps_compared'], 'step')} compared)"
    names_ = ", ".join(r["op"] for r in v["ops"][:4]) + (", ..." if len(v["ops"]) + v["more"] > 4 else "")
    return (f"input shapes vary across steps: {counted(len(v['ops']) + v['more'], 'op')} ({names_}): a graph-compiling "
            "target compiles them again for each new shape")
