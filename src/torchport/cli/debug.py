"""`torchport compare` and `debug dump|nan`: dump runs, compare them, find the first NaN/Inf."""
from __future__ import annotations

import os
import sys

from ..core.names import printable
from ..core.words import counted
from .common import add_amp_dtype, add_simulate, output_path, target_name


def run_compare(args) -> int:
    from ..debug.runs import compare_runs, summary, write_comparison

    result = compare_runs(args.a, args.b, rank=args.rank, rtol=args.rtol)
    print(f"torchport compare: {len(result.compared)} aligned outputs, {len(result.failed)} failed, "
          f"{result.only_a} only in A, {result.only_b} only in B")
    for line in summary(result, printable):
        print(f"  {line}")
    if args.output:
        folder = write_comparison(result, args.output, args.a, args.b)
        print(f"  report: {printable(os.path.join(folder, 'compare.md'))} (+ compare.csv)")
    return 1 if result.failed or not result.compared else 0


def run_debug(args) -> int:
    from ..debug import script

    if args.debug_command == "dump":
        code, dumper, step = script.dump_script(args.program, args.output, tensors=args.tensors,
                                                steps=args.steps, target=args.to, amp_dtype=args.amp_dtype,
                                                simulate=args.simulate)
        print(f"torchport debug dump: {counted(dumper.entries, 'entry', 'entries')} (op outputs, parameters, "
              f"gradients) in {counted(dumper.steps_dumped, 'step')} (a step: {step}) -> {printable(str(dumper.folder / 'ops.jsonl'))}",
              file=sys.stderr)
        if code:
            print(f"  the script failed (exit {code}): the dump holds what ran before the failure", file=sys.stderr)
        else:
            print(f"  next: torchport compare A_DUMP {printable(args.output)}", file=sys.stderr)
        return code
    code, tracker, step = script.nan_script(args.program, steps=args.steps, check_every=args.check_every,
                                            target=args.to, amp_dtype=args.amp_dtype, simulate=args.simulate)
    found = tracker.first is not None or tracker.nonfinite_outputs
    failed = (f"the script failed (exit {code}) before its end, so only what ran before the failure was searched: "
              if code and not found else "")
    print(f"torchport debug nan: {failed}{printable(tracker.describe())}; {tracker.nonfinite_outputs} op calls "
          f"output NaN/Inf (a step: {step})", file=sys.stderr)
    for note in _amp_notes():
        print(f"  note: {printable(note)}", file=sys.stderr)
    return code or (1 if found else 0)


def _amp_notes() -> list:
    """What the run-time patches said about autocast's dtype (a NaN hunt in bfloat16 misses float16 overflow)."""
    from ..runtime import active

    session = active()
    return [n for n in session.stats.notes if "CUDA autocast" in n] if session is not None else []


def add(sub) -> None:
    cmp = sub.add_parser("compare", help="compare two runs dumped with torchport.debug.dump (GPU vs target)",
                         description="Compare two runs dumped with `torchport debug dump` (or torchport.debug.dump) "
                                     "op by op, step by step, and name the first op whose outputs differ beyond the "
                                     "tolerance. See docs/debug.md.")
    cmp.add_argument("a", metavar="A", help="dump folder of the reference run")
    cmp.add_argument("b", metavar="B", help="dump folder of the run under test")
    cmp.add_argument("-o", "--output", type=output_path, metavar="DIR", help="write compare.csv and compare.md there")
    cmp.add_argument("--rank", type=int, default=0, help="which process's dump to compare "
                                                                 "(multi-process runs); default 0")
    cmp.add_argument("--rtol", type=float, metavar="X", help="the relative error allowed everywhere (default: by "
                                                             "dtype, docs/debug.md)")
    cmp.set_defaults(func=run_compare)
    dbg = sub.add_parser("debug", help="dump a run (for compare) or find its first NaN/Inf, without editing the script",
                         description="Run a script under a debugging hook, without editing it: `debug dump` "
                                     "records op outputs per step for `torchport compare`, `debug nan` names the first "
                                     "op making NaN/Inf.")
    dsub = dbg.add_subparsers(dest="debug_command", metavar="DEBUG_COMMAND", required=True)
    for name, text in (("dump", "dump op outputs, parameters and gradients per step (for `torchport compare`)"),
                       ("nan", "name the first op making NaN/Inf from finite inputs: op, module, phase, step")):
        d = dsub.add_parser(name, help=text, description=text + "; the script runs in this process. See docs/debug.md.",
                            usage=f"torchport debug {name} " + ("-o DIR [--tensors] " if name == "dump" else
                                                                "[--check-every N] ")
                                  + "[--steps A-B] [--to TARGET [--simulate]] -- python script.py [ARGS...]")
        if name == "dump":
            d.add_argument("-o", "--output", type=output_path, required=True, metavar="DIR", help="dump folder")
            d.add_argument("--tensors", action="store_true", help="also save the tensors (else statistics only)")
        else:
            d.add_argument("--check-every", type=int, default=256, metavar="N", help="ops between host checks")
        d.add_argument("--steps", metavar="A-B", help="only steps A to B (from 0; A- or A also), then end the script")
        d.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="apply `torchport run --to TARGET` first")
        add_amp_dtype(d)
        add_simulate(d)
        d.set_defaults(func=run_debug, program=[])
        d.takes_program = True
