"""`torchport sim`: run code on a simulated npu/mlu/musa device."""
from __future__ import annotations

from ..core.errors import UsageError
from .common import target_name


def run(args) -> int:
    from ..sim import launch

    if args.build:
        return launch.build(verbose=args.verbose)
    if not args.to:
        raise UsageError("sim needs --to TARGET (npu, mlu or musa)")
    options = launch.SimOptions(devices=args.devices, cpu_fallback=args.cpu_fallback, strict_ops=args.strict_ops,
                                rng=args.rng, torch_version=args.torch_version, chip=args.chip)
    return launch.run(args.to, args.program, options, report=args.report)


def add(sub) -> None:
    sm = sub.add_parser("sim", help="run converted code on a simulated npu/mlu/musa device (CPU-backed)",
                        usage="torchport sim --to TARGET [--devices N] [--chip NAME] [--strict-ops | --cpu-fallback] "
                              "[--rng host|device] [--report FILE] -- COMMAND [ARGS...]\n       torchport sim --build [--verbose]",
                        description="Run COMMAND (python train.py, torchrun ..., a shell script) with a simulated "
                                    "TARGET device: `import torch_npu` (torch_mlu, torch_musa) finds torchport's "
                                    "stand-in, which registers the device, torch.<target> and its collective "
                                    "backend. Numerics are the CPU's; performance is not the device's. "
                                    "See docs/sim.md.")
    sm.add_argument("-t", "--to", metavar="TARGET", type=target_name, help="npu, mlu or musa")
    sm.add_argument("--devices", type=int, default=1, metavar="N", help="number of simulated devices (default 1)")
    sm.add_argument("--chip", metavar="NAME", help="the chip the simulated device presents: its name, memory, "
                                                   "capability and the vendor's bf16 rule (kb/sim/chips.toml; "
                                                   "default: the target's default chip; a wrong name lists them)")
    sm.add_argument("--strict-ops", action="store_true",
                    help="every op the target lacks raises, naming the op list (also TORCHPORT_SIM_STRICT_OPS=1). "
                         "Default: what the hardware does: npu and mlu run it on the CPU with the vendor's warning "
                         "and count it in the report (TORCH_NPU_FALLBACK_CPU_DISABLE=1 / ENABLE_FALLBACK_TO_CPU=0 "
                         "turn that into the vendor's error, as on the device); musa raises")
    sm.add_argument("--cpu-fallback", action="store_true", help="ops the target lacks run on the CPU and are "
                                                                "counted on every target, musa included")
    sm.add_argument("--rng", choices=("host", "device"), default="host",
                    help="host (default): device random numbers come from the host generator, so a run matches "
                         "its cpu conversion; device: one generator per device, as on hardware")
    sm.add_argument("-v", "--torch-version", metavar="X", help="use the target's operator list for this torch "
                                                                "version (default: the installed torch)")
    sm.add_argument("--report", metavar="FILE", help="write the merged report (JSON, or Markdown for .md)")
    sm.add_argument("--build", action="store_true", help="build (or find) the simulator's extension and exit")
    sm.add_argument("--verbose", action="store_true", help="with --build: show the compiler output")
    sm.set_defaults(func=run, program=[])
    sm.takes_program = True
