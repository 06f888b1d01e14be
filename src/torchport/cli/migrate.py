"""`torchport migrate`: analyze, convert, port-ext, check (and verify) into one output tree and one report."""
from __future__ import annotations

import os
import shlex
import sys

from ..core.errors import UsageError
from ..core.names import printable
from ..core.words import counted
from . import settings
from .common import jobs, output_path, target_name

FAIL_ROWS = 5     # rows that would fail, named on the terminal


def run(args) -> int:
    from ..api import migrate
    from ..commands.migrate import RISK_TITLES, RISKS, rows

    program = args.program or None
    if args.verify and not program:
        raise UsageError("--verify needs a command after --: torchport migrate PROJECT --to npu --verify -- python "
                         "train.py")
    if program and not args.verify:
        raise UsageError(f"unexpected argument '{printable(program[0])}' (a command to run goes after --verify --)")
    if program and "/" not in program[0]:   # a program on PATH: found now, not after the whole migration
        from ..sim.launch import resolve_command

        resolve_command(program)
    if args.output == "":
        raise UsageError("-o needs a folder name (it was empty)")

    def echo(line: str) -> None:
        print(f"  | {printable(line)}", file=sys.stderr)

    conf = settings.resolve(args, [args.input], "migrate")   # the project's [tool.torchport], as convert reads it
    result = migrate(args.input, args.to, args.output, force=args.force, verify=program, jobs=args.jobs,
                     echo=echo if not args.quiet else None, python=args.python, runtime_shim=args.runtime_shim,
                     exclude=conf.exclude, selection=settings.selection(args, conf, args.input),
                     cache=not args.no_cache)
    out = printable(result.output)
    a, c, k = result.analysis.summary(), result.convert.summary(), result.check.summary()
    print(f"torchport migrate --to {printable(result.target)}: {printable(result.input)} -> {out} "
          f"in {result.elapsed:.2f} s")
    print(f"  analyze:  {counted(a['files'], 'file')}, {counted(a['touchpoints'], 'CUDA touchpoint')}, "
          f"{counted(a['cuda_kernels'], 'CUDA kernel')}, {len(result.analysis.advice(result.target))} performance "
          "advice")
    status = ", ".join(f"{v} {s}" for s, v in c["files_by_status"].items())
    print(f"  convert:  {c['files']} files ({status}), {c['changes']} changes, {c['unsupported']} unsupported, "
          f"{c['advice']} to review, {c['errors']} errors"
          + (f" ({counted(result.convert.reused, 'file')} as in the last run; --no-cache converts all)"
             if result.convert.reused else ""))
    print(f"  port-ext: {printable(result.port_note)}")
    print(f"  check:    {counted(k['files'], 'file')}, {counted(k['problems'], 'problem')} "
          f"({counted(k['changes'], 'change')}, {k['unsupported']} unsupported, {counted(k['errors'], 'error')}), "
          f"{k['notes']} to review")
    v = result.verify
    if v is None:
        print("  verify:   not verified (add --verify -- COMMAND)")
    else:
        print(f"  verify:   `{printable(shlex.join(v.command))}` on {printable(v.where)}: exit {v.exit_code} "
              f"({v.verdict})")
    counts = result.counts()
    n = counts["by_risk"]
    # its own quantity: every item once, from every step (check's findings are some of them)
    print(f"  what's left: {counted(counts['items'], 'item')}: " + ", ".join(f"{n[r]} {RISK_TITLES[r]}" for r in RISKS)
          + (" (by step: " + ", ".join(f"{k} {v}" for k, v in counts["by_source"].items()) + ")"
             if counts["items"] else ""))
    failing = [r for r in rows(result.items) if r.first.risk == "fail"]
    for r in failing[:FAIL_ROWS]:
        print(f"    {printable(r.where)}: {printable(r.item)} ({r.first.effort})")
    if len(failing) > FAIL_ROWS:
        print(f"    ... and {len(failing) - FAIL_ROWS} more in the report")
    report = os.path.join(result.report_dir, "migrate.md")
    more = ["migrate.html", "migrate.json", "convert/"] + ["port-ext/"] * (result.port is not None) + ["verify.log"] * (v is not None)
    print(f"  report: {printable(report)} (+ {', '.join(more)})")
    print(f"next: {next_step(result)}")
    return result.exit_code


def next_step(result) -> str:
    """The natural next command, from where the migration stands."""
    out, target = shlex.quote(result.output), result.target
    report = printable(os.path.join(result.report_dir, "migrate.md"))
    v = result.verify
    if v is not None and v.verdict == "failed":
        known = [i.rule for i in result.items if i.kind == "known-error"]
        if known:
            return f"fix the known error{'s' if len(known) > 1 else ''} the verify hit ({', '.join(known)}; " \
                   f"cause and fix in {report}), then run migrate with --verify again"
        return f"torchport explain --file {shlex.quote(os.path.join(result.report_dir, 'verify.log'))}"
    failing = [i for i in result.items if i.risk == "fail"]
    passed = v is not None and v.verdict == "passed"
    if failing and passed and all(i.kind == "library" for i in failing):
        return (f"verify passed, but the installed libraries' CUDA code it went through may have run on the CPU or "
                f"unguarded ({report}): add --runtime-shim, or convert those calls")
    if failing:
        ran = "verify passed, so they are on paths it did not run: " if passed else ""
        return f"{ran}fix the items that would fail (report: {report}), then: torchport check {out} --to {target}"
    command = shlex.join(v.command) if v is not None else f"python {shlex.quote(_entry_script(result.output))}"
    if v is None or v.verdict == "unverified":
        if target == "cpu":
            return f"cd {out} && {command}"
        if _simulated(target):
            hint = "" if v is None else f"import {target_package(target)} in the entry script, then: "
            return f"{hint}cd {out} && torchport sim --to {target} -- {command}"
        return f"on a machine with {target} (`torchport doctor --to {target}` checks it): cd {out} && {command}"
    return f"torchport check {out} --to {target}  (keep it in CI)"


def target_package(target: str) -> str:
    from ..backends import load_target

    return load_target(target).register or target


ENTRY_NAMES = ("train.py", "main.py", "run.py")
ENTRY_DEPTH = 2       # folders below the top searched for an entry script (YOLOX: tools/train.py)


def _entry_script(folder: str) -> str:
    """The project's entry script, when one stands out: train.py, main.py or run.py at the top, else the one
    script with a `__main__` block there, else the shallowest train.py/main.py/run.py below (one at that depth:
    yolov5/train.py, tools/train.py); else the word SCRIPT."""
    try:
        scripts = sorted(n for n in os.listdir(folder) if n.endswith(".py") and n != "setup.py")
    except OSError:
        return "SCRIPT"
    for name in ENTRY_NAMES:
        if name in scripts:
            return name
    main = []
    for name in scripts:
        try:
            with open(os.path.join(folder, name), encoding="utf-8", errors="replace") as f:
                if "__main__" in f.read(1 << 20):
                    main.append(name)
        except OSError:
            continue
    if main:
        return main[0] if len(main) == 1 else "SCRIPT"
    level = [folder]
    for _ in range(ENTRY_DEPTH):
        below = []
        for d in level:
            try:
                below += sorted(e.path for e in os.scandir(d) if e.is_dir(follow_symlinks=False)
                                and not e.name.startswith((".", "_")) and e.name not in ("tests", "test", "docs"))
            except OSError:
                continue
        for names in (ENTRY_NAMES[:1], ENTRY_NAMES[1:]):  # a train.py first
            found = [os.path.join(d, n) for d in below for n in names if os.path.isfile(os.path.join(d, n))]
            if found:
                return os.path.relpath(found[0], folder).replace(os.sep, "/") if len(found) == 1 else "SCRIPT"
        level = below
    return "SCRIPT"


def _simulated(target: str) -> bool:
    from ..sim import simulated_targets

    return target in simulated_targets()


def add(sub) -> None:
    m = sub.add_parser("migrate", help="analyze, convert, port-ext and check a project into one tree and one report",
                       usage="torchport migrate PROJECT --to TARGET [-o OUT] [--force] [--python PATH] [--runtime-shim] "
                             "[--verify -- COMMAND ...]",
                       description="Migrate a CUDA project folder for TARGET: analyze it, convert it into OUT "
                                   "(default: <name>_<target> beside it, as convert does), port its C++/CUDA "
                                   "sources there (musa) or list the kernels to rewrite (npu, mlu), check the "
                                   "result and, with --verify, run COMMAND in OUT (on the simulated device for "
                                   "npu, mlu and musa). One report: OUT/torchport-report/migrate.md, \"What's "
                                   "left\" first. See docs/migrate.md.")
    m.add_argument("input", metavar="PROJECT", help="the project folder")
    m.add_argument("-t", "--to", required=True, metavar="TARGET", type=target_name,
                   help="npu, mlu, musa, xpu, mps, cpu, accelerator, or a target .toml file")
    m.add_argument("-o", "--output", type=output_path, metavar="OUT", help="output folder (default: <name>_<target> next to PROJECT)")
    m.add_argument("--force", action="store_true", help="write into an existing output folder")
    m.add_argument("--no-cache", action="store_true",
                   help="convert every file again (default: a file unchanged since the last run of this project and "
                        "target takes that run's result)")
    m.add_argument("--python", metavar="PATH", help="the interpreter whose installed libraries the project uses "
                   "(default: this one): their CUDA code on the paths the project calls goes into What's left")
    m.add_argument("--runtime-shim", action="store_true",
                   help="entry scripts import the target's run-time mapping first (import torchport.auto; on npu "
                        "Ascend's transfer_to_npu), for the CUDA code of the libraries the project calls")
    m.add_argument("--verify", action="store_true", help="run the command after -- in OUT and report its result")
    m.add_argument("-q", "--quiet", action="store_true", help="do not echo the verify command's output")
    m.add_argument("-j", "--jobs", type=jobs, metavar="N", help="worker processes (default: CPU count)")
    settings.add_options(m)
    m.set_defaults(func=run, program=[])
    m.takes_program = True
    m.program_after_dashes = True
