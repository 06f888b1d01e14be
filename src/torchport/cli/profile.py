"""`torchport profile` and `profile diff`: profile a script's steps; compare two profiles."""
from __future__ import annotations

import os
import sys

from ..core.errors import UsageError
from ..core.names import printable
from ..core.words import counted
from .common import add_amp_dtype, add_simulate, output_path, target_name


def run(args) -> int:
    if not args.output:
        raise UsageError("profile needs -o DIR")
    from ..profile import ProfileRequest, profile_script

    code, profiler = profile_script(ProfileRequest(tuple(args.program), args.output, target=args.to, steps=args.steps,
                                                   wait=args.wait, warmup=args.warmup, step_fn=args.step_fn,
                                                   window=args.window, amp_dtype=args.amp_dtype,
                                                   simulate=args.simulate))
    r = profiler.result
    if r is None:
        print(f"torchport profile: no step was profiled: {printable(profiler.why_empty)}", file=sys.stderr)
        return code or 1
    s = r["steps"]
    window = ("the whole run as one window (it ended before its first step ended), "
              if s["step_by"] == "whole run" else
              f"{counted(s['profiled'], 'step')} (one step = one {printable(s['step_by'])}), mean ")
    print(f"torchport profile: {window}{s['mean_wall_step_us'] / 1e3:.2f} ms, {counted(len(r['ops']), 'op')}; "
          f"{r['bound']}", file=sys.stderr)
    from ..profile.advice import copy_line, shapes_line

    print(f"  {printable(copy_line(r['copy_format']))}", file=sys.stderr)
    print(f"  {printable(shapes_line(r['varying_shapes']))}", file=sys.stderr)
    print(f"  {printable(os.path.join(args.output, 'summary.md'))} (+ ops.csv, trace.json, profile.json)",
          file=sys.stderr)
    return code


def run_diff(args) -> int:
    from ..profile import diff

    paths, output = [args.a, args.b], args.output
    result = diff.diff(diff.load(paths[0]), diff.load(paths[1]))
    print(f"torchport profile diff: step speedup A/B {result['step_speedup_a_over_b']}; "
          f"added in B: {printable(', '.join(result['added'])) or 'none'}; "
          f"removed: {printable(', '.join(result['removed'])) or 'none'}")
    for r in result["ops"][:5]:
        print(f"  {printable(r['op'])}: {r['a_us_per_step']:.1f} -> {r['b_us_per_step']:.1f} us/step ({r['status']})")
    if output:
        written = diff.write(result, output, paths[0], paths[1])
        print(f"  report: {', '.join(printable(p) for p in written)}")
    return 0


def add(sub) -> None:
    pr = sub.add_parser("profile", help="profile a script's steps (trace, op table, summary); "
                                        "`profile diff A B` compares two profiles",
                        usage="torchport profile [--to T] [--steps N] [--wait W] [--warmup U] [--step-fn F] "
                              "[--window S] -o DIR -- python script.py [ARGS...]\n"
                              "       torchport profile diff A B [-o DIR]",
                        description="Profile a script in this process. A step ends at each optimizer.step(); "
                                    "an inference loop is stepped by calls of --step-fn, or else by wall-clock "
                                    "windows (when the script makes no optimizer in the first window). See "
                                    "docs/profile.md.")
    pr.add_argument("-o", "--output", type=output_path, required=True, metavar="DIR", help="profile folder")
    pr.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="the target: its device activity is profiled and "
                                                         "`torchport run --to TARGET` patches are applied")
    add_amp_dtype(pr)
    add_simulate(pr)
    pr.add_argument("--steps", type=int, default=3, help="active (recorded) steps; default 3")
    pr.add_argument("--wait", type=int, default=1, help="steps skipped first; default 1")
    pr.add_argument("--warmup", type=int, default=1, help="steps traced but discarded; default 1")
    pr.add_argument("--step-fn", metavar="F", help="a step is one call of F: FUNCTION (in the script), "
                                                   "MODULE:FUNCTION or MODULE:Class.method (inference loops)")
    pr.add_argument("--window", type=float, metavar="S", help="seconds of one wall-clock step, used when the "
                                                              "script makes no optimizer in the first window; "
                                                              "default 1")
    pr.set_defaults(func=run, program=[])
    pr.takes_program = True
    pd = sub.add_parser("profile-diff", help="compare two profiles (also spelled `profile diff A B`)",
                        prog="torchport profile diff",
                        description="Compare two profiles per op and per step (diff.md, diff.csv, diff.png).")
    pd.add_argument("a", metavar="A", help="profile folder of the reference run")
    pd.add_argument("b", metavar="B", help="profile folder of the run under test")
    pd.add_argument("-o", "--output", type=output_path, metavar="DIR", help="write diff.md, diff.csv and diff.png there")
    pd.set_defaults(func=run_diff)
