"""`torchport run`: run a CUDA script unmodified on the target."""
from __future__ import annotations

from ..core.errors import UsageError
from .common import add_amp_dtype, target_name


def run(args) -> int:
    from ..runtime.launch import run

    simulate = None
    if args.simulate:
        simulate = {"devices": args.devices, "cpu_fallback": args.cpu_fallback, "strict_ops": args.strict_ops}
    elif args.devices != 1 or args.cpu_fallback or args.strict_ops:
        raise UsageError("--devices, --strict-ops and --cpu-fallback need --simulate")
    program, module = args.program, None
    if program[:1] == ["-m"]:
        if len(program) < 2:
            raise UsageError("run -m needs a MODULE")
        module, program = program[1], program[2:]
    return run(args.to, program, module=module, report=args.report, policy=args.policy,
               on_missing=args.on_missing, simulate=simulate, amp_dtype=args.amp_dtype)


def add(sub) -> None:
    r = sub.add_parser("run", help="run a CUDA script unmodified on the target (zero-edit migration)",
                       usage="torchport run --to TARGET [--report FILE] [--policy P] [--on-missing M] "
                             "(script.py | -m MODULE | PROGRAM) [ARGS...]",
                       description="Patch torch.cuda, device arguments, nccl, AMP and the profiler for TARGET, then "
                                   "run a script or module as __main__ (argv intact), or a program such as torchrun "
                                   "whose Python children patch themselves. See docs/run.md.")
    r.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="target (default: TORCHPORT_TARGET, else the installed "
                                                          "vendor stack, else cpu)")
    r.add_argument("--report", metavar="FILE", help="at exit, write what was redirected and what failed "
                                                    "(JSON, or Markdown for .md), all processes merged")
    r.add_argument("--policy", choices=("project", "always", "real"),
                   help="who is told torch.cuda.is_available() is True: the project's code (default), "
                        "everyone, or no one")
    r.add_argument("--on-missing", choices=("neutral", "warn", "raise"),
                   help="a CUDA API with no counterpart: neutral (default: observing calls such as memory "
                        "statistics return a neutral value, warned once; others fail), warn (others are "
                        "skipped, returning None) or raise (all fail)")
    add_amp_dtype(r)
    r.add_argument("-m", dest="module", metavar="MODULE", help="run a module as __main__ (like python -m)")
    r.add_argument("--simulate", action="store_true", help="run on torchport's simulated TARGET device "
                                                           "(npu, mlu, musa; see `torchport sim`)")
    r.add_argument("--devices", type=int, default=1, metavar="N", help="simulated devices (with --simulate)")
    r.add_argument("--strict-ops", action="store_true", help="with --simulate: every op the target lacks raises "
                                                             "(default: what the hardware does, see `torchport sim`)")
    r.add_argument("--cpu-fallback", action="store_true", help="with --simulate: ops the target lacks run on the "
                                                               "CPU and are counted, on every target")
    r.set_defaults(func=run, program=[])
    r.takes_program = True
