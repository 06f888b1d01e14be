"""`torchport ops check|record`: operator support of a target, and the ops a script runs."""
from __future__ import annotations

import json
import sys
from collections import Counter

from ..core.names import printable
from ..core.words import counted
from .common import output_path, target_name


def run_check(args) -> int:
    from dataclasses import replace

    from ..backends import load_target
    from ..kb.operators import CPU_ONLY, FALLBACK, MISSING, check, load_ops_file, load_via, recorded_torch

    target = load_target(args.to)
    rows = load_ops_file(args.ops)
    recorded = recorded_torch(args.ops)
    ops, results = check(rows, target, args.torch_version or recorded, via=load_via(args.ops))
    if ops is not None and not (args.torch_version or recorded):
        ops = replace(ops, note="; ".join(x for x in (f"the ops file does not say which torch recorded it: using the "
                                                      f"data for torch {ops.torch_version}", ops.note) if x))
    if args.json:
        json.dump({"target": target.name, "data": (ops.vendor_version, ops.torch_version, ops.note) if ops else None,
                   "recorded_torch": recorded, "torch_version": args.torch_version or recorded,
                   "ops": [{"op": st.op, "status": st.status, "detail": st.detail, "count": n, "modules": m,
                            **({"asked": st.asked} if st.asked else {})} for st, n, m in results]},
                  sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        where = f"{ops.vendor_version or 'torch'} (torch {ops.torch_version})" if ops else "no data"
        by = f" recorded with torch {printable(recorded)}" if recorded else ""
        distinct = len({op for op, _n, _m in rows})
        checked = (f"{counted(len(results), 'op')} checked of {distinct}{by} ({distinct - len(results)} run only "
                   f"inside ops {printable(target.name)} runs whole)" if distinct > len(results)
                   else f"{counted(len(results), 'op')}{by}")
        print(f"torchport ops check --to {printable(target.name)}: {checked}, data: {where}")
        if ops is not None and ops.note:
            print(f"  note: {printable(ops.note)}")
        for st, n, modules in results:
            if st.status in (MISSING, FALLBACK, CPU_ONLY) or st.asked or args.all:
                extra = f"  [{printable(', '.join(modules[:3]))}]" if modules else ""
                print(f"  {st.status:13} {printable(st.op):40} x{n}{extra}"
                      + (f"  ({printable(st.detail)})" if st.detail else ""))
        counts = Counter(st.status for st, _, _ in results)
        print("  " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    bad = {"missing": (MISSING,), "fallback": (MISSING, FALLBACK, CPU_ONLY)}.get(args.fail_on, ())
    return 1 if any(st.status in bad for st, _, _ in results) else 0


def run_record(args) -> int:
    from ..debug.record_cli import record_script

    code, recorder, path = record_script(args.program, args.output, steps=args.steps, target=args.to)
    data = recorder.to_dict()
    print(f"torchport ops record: {counted(data['total_calls'], 'op call')}, "
          f"{counted(len(data['ops']), 'distinct op')}, {counted(data['steps'], 'step')} -> {printable(path)}", file=sys.stderr)
    print(f"  next: torchport ops check {printable(path)} --to TARGET", file=sys.stderr)
    return code


def add(sub) -> None:
    o = sub.add_parser("ops", help="operator support",
                      description="Operator support: `ops record` records the aten ops a script runs, "
                                  "`ops check` says which of them a target lacks, falls back on or runs only on the CPU.")
    osub = o.add_subparsers(dest="ops_command", metavar="OPS_COMMAND")
    oc = osub.add_parser("check", help="which recorded aten ops a target lacks or runs on the CPU",
                         description="Check recorded aten ops (from `ops record`, or a list) against a target's "
                                     "operator data: missing, falling back to the CPU, CPU-only, supported.")
    oc.add_argument("ops", help='ops JSON: ["aten::add.Tensor", ...], {"op": count}, or {"ops": [{"op", "count", "modules"}]}')
    oc.add_argument("-t", "--to", required=True, metavar="TARGET", type=target_name, help="the target to check against")
    oc.add_argument("-v", "--torch-version", metavar="X", help="pick the operator data for this torch version "
                                                                "(default: the one the ops file was recorded with)")
    oc.add_argument("--all", action="store_true", help="list supported ops too")
    oc.add_argument("--fail-on", choices=("missing", "fallback"), help="exit 1 when an op is missing (or falls back, "
                                                                       "or has a kernel only on the CPU)")
    oc.add_argument("--json", action="store_true", help="print the result as JSON")
    oc.set_defaults(func=run_check)
    orc = osub.add_parser("record", help="record the aten ops a script runs (for ops check)",
                          usage="torchport ops record -o OPS.json [--steps N] [--to TARGET] -- python script.py [ARGS...]",
                          description="Run a script (in this process, as __main__) under an operator recorder: every aten "
                                      "op with its overload, input shapes, module paths, forward/backward and counts.")
    orc.add_argument("-o", "--output", type=output_path, required=True, metavar="OPS.json", help="the ops file to write")
    orc.add_argument("--steps", type=int, metavar="N", help="stop after N optimizer steps")
    orc.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="apply `torchport run --to TARGET` first (record a CUDA "
                                                          "script on a machine without CUDA)")
    orc.set_defaults(func=run_record, program=[])
    orc.takes_program = True
