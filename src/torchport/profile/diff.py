"""`torchport profile diff A B`: two profiles (say the GPU run and the target run) side by side.

Per op: time per profiled step in A and B (host self + device self), the difference and the
ratio A/B (> 1: B is faster), ops only in A or only in B; per step: mean step time and the
speedup.  Writes diff.md, diff.csv and, when matplotlib is installed, diff.png (the ops whose
time changed most).

`load` checks what diff reads from profile.json (a UsageError naming the file and the field for
anything else): times are finite numbers, counts whole numbers, op names strings.
"""
from __future__ import annotations

from collections import defaultdict
from pathlib import Path

from ..core import writes
from ..core.csvfile import write_csv
from ..core.errors import UsageError
from ..core.jsonfile import Fields, read_json
from ..core.names import md_cell, md_code


def load(folder) -> dict:
    """The parts of <folder>/profile.json that diff uses, checked."""
    path = Path(folder) / "profile.json"
    if path.exists() and not path.is_file():  # a pipe or a device could be read forever
        raise UsageError(f"{path} is not a regular file")
    if not path.is_file():
        raise UsageError(f"no profile in {folder} (expected {path}; make one with torchport profile)")
    top = Fields(read_json(path, what="profile"), str(path))
    steps = top.obj("steps")
    ops = []
    for i, value in enumerate(top.array("ops")):
        o = Fields(value, f"{path}: ops[{i}]")
        ops.append({"op": o.text("op"), "calls": o.count("calls"), "host_self_us": o.number("host_self_us"),
                    "device_self_us": o.number("device_self_us")})
    profiled = steps.count("profiled")
    if profiled < 1:  # per-step times divide by it: a profile of no step measures nothing
        raise UsageError(f"{path}: steps.profiled is {profiled}: a profile must hold at least one profiled step")
    return {"target": top.text("target", None),
            "steps": {"profiled": profiled, "mean_wall_step_us": steps.number("mean_wall_step_us")},
            "ops": ops}


def _per_step(profile: dict) -> tuple:
    """({op: us per step}, {op: calls per step}); an op listed twice counts twice."""
    steps = max(profile["steps"]["profiled"], 1)
    times: defaultdict[str, float] = defaultdict(float)
    calls: defaultdict[str, float] = defaultdict(float)
    for o in profile["ops"]:
        times[o["op"]] += (o["host_self_us"] + o["device_self_us"]) / steps
        calls[o["op"]] += o["calls"] / steps
    return times, calls


def diff(a: dict, b: dict) -> dict:
    ta, ca = _per_step(a)
    tb, cb = _per_step(b)
    rows = []
    for op in sorted(set(ta) | set(tb)):
        x, y = ta.get(op), tb.get(op)
        status = "both" if x is not None and y is not None else "only in A" if y is None else "only in B"
        rows.append({"op": op, "a_us_per_step": round(x or 0.0, 3), "b_us_per_step": round(y or 0.0, 3),
                     "delta_us": round((y or 0.0) - (x or 0.0), 3),
                     "ratio_a_over_b": round(x / y, 4) if x and y else None,
                     "a_calls_per_step": ca.get(op, 0), "b_calls_per_step": cb.get(op, 0), "status": status})
    rows.sort(key=lambda r: -abs(r["delta_us"]))
    sa, sb = a["steps"]["mean_wall_step_us"], b["steps"]["mean_wall_step_us"]
    return {"a": a.get("target"), "b": b.get("target"), "step_us": {"a": sa, "b": sb},
            "step_speedup_a_over_b": round(sa / sb, 4) if sa and sb else None,
            "added": [r["op"] for r in rows if r["status"] == "only in B"],
            "removed": [r["op"] for r in rows if r["status"] == "only in A"], "ops": rows}


COLUMNS = ("op", "a_us_per_step", "b_us_per_step", "delta_us", "ratio_a_over_b", "a_calls_per_step",
           "b_calls_per_step", "status")


def write(result: dict, folder, a_name: str, b_name: str, top: int = 15) -> list:
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    write_csv(folder / "diff.csv", COLUMNS, ([r[c] for c in COLUMNS] for r in result["ops"]))
    s = result["step_us"]
    lines = [f"# torchport profile diff: {md_code(a_name)} (A) vs {md_code(b_name)} (B)", "",
             f"- mean step: A {s['a'] / 1e3:.2f} ms, B {s['b'] / 1e3:.2f} ms; speedup A/B "
             f"{result['step_speedup_a_over_b']}",
             f"- ops only in B (added): {', '.join(map(md_code, result['added'])) or 'none'}",
             f"- ops only in A (removed): {', '.join(map(md_code, result['removed'])) or 'none'}", "",
             "| op | A us/step | B us/step | delta us | A/B | calls A | calls B | |", "|---|---|---|---|---|---|---|---|"]
    for r in result["ops"][:60]:
        lines.append(f"| {md_cell(r['op'])} | {r['a_us_per_step']:.1f} | {r['b_us_per_step']:.1f} | {r['delta_us']:+.1f} | "
                     f"{r['ratio_a_over_b'] if r['ratio_a_over_b'] is not None else ''} | {r['a_calls_per_step']:g} | "
                     f"{r['b_calls_per_step']:g} | {r['status'] if r['status'] != 'both' else ''} |")
    writes.write_text(folder / "diff.md", "\n".join(lines) + "\n")
    written = [folder / "diff.md", folder / "diff.csv"]
    png = chart(result, folder / "diff.png", a_name, b_name, top)
    if png is not None:
        written.append(png)
    return written


def _plain(text: str) -> str:
    """Text that matplotlib shows as it is: a name between two $ would be parsed as math (and can fail);
    control characters (no glyph) become spaces."""
    return "".join(c if c.isprintable() else " " for c in str(text)).replace("$", r"\$")


def chart(result: dict, path: Path, a_name: str, b_name: str, top: int):
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        return None
    rows = result["ops"][:top][::-1]
    fig, ax = plt.subplots(figsize=(9, 0.35 * len(rows) + 1.5))
    ys = range(len(rows))
    ax.barh([y + 0.2 for y in ys], [r["a_us_per_step"] for r in rows], height=0.4, label=f"A: {_plain(a_name)}")
    ax.barh([y - 0.2 for y in ys], [r["b_us_per_step"] for r in rows], height=0.4, label=f"B: {_plain(b_name)}")
    ax.set_yticks(list(ys))
    ax.set_yticklabels([_plain(r["op"]) + ("  (added)" if r["status"] == "only in B" else "  (removed)"
                                           if r["status"] == "only in A" else "") for r in rows], fontsize=8)
    ax.set_xlabel("time per step (us, host self + device self)")
    ax.set_title(f"largest changes per op (step speedup A/B: {result['step_speedup_a_over_b']})", fontsize=10)
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path
