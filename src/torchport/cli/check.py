"""`torchport check`: exit 1 when files still need converting (CI, pre-commit)."""
from __future__ import annotations

import json
import shlex
import sys

from ..core.errors import UsageError
from ..core.files import same_file
from ..core.names import printable
from ..core.words import counted
from . import settings
from .common import jobs, output_path, progress, target_name, write_out


def run(args) -> int:
    from ..commands.check import CheckRequest, check, find_root, write_baseline, write_output

    conf = settings.resolve(args, args.inputs, "check")
    selection = settings.selection(args, conf, find_root(args.inputs, args.root))
    baseline = args.baseline or (conf.baseline if not args.write_baseline else None)
    for what, other in (("the baseline", baseline), ("the baseline to write", args.write_baseline),
                        ("the settings", conf.path)):   # files this run reads or writes besides the report
        if args.output and other and same_file(args.output, other):
            raise UsageError(f"-o {args.output} is {what} ({other}): the report would replace it; choose another name")
    result = check(CheckRequest.of(args.inputs, args.to, exclude=[*conf.exclude, *(args.exclude or ())],
                                   root=args.root, baseline=baseline, jobs=args.jobs,
                                   keep_edits=args.format == "sarif", progress=progress(), selection=selection))
    if args.format != "text" or args.output:  # the text report names them itself
        settings.print_warnings(result.findings)
    verdict = None
    if args.write_baseline:
        n = write_baseline(result, args.write_baseline)
        errors = result.summary()["errors"]
        verdict = f"baseline written ({counted(n, 'finding')})" + (
            f"; FAILED: {counted(errors, 'error')} (files that could not be checked are never baselined)" if errors else "")
    if args.format == "sarif":
        from ..report.sarif import to_sarif

        report = json.dumps(to_sarif(result), indent=1, ensure_ascii=False) + "\n"
    elif args.format == "json":
        report = json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n"
    else:
        report = result.text(verdict)
    if args.output:
        write_output(result, args.output, report)
        print(result.summary_line(verdict))
    else:
        write_out(report)
    if args.write_baseline:
        print(f"  baseline: {n} findings recorded in {printable(args.write_baseline)}", file=sys.stderr)
        return 1 if errors else 0
    changes = result.summary()["changes"]
    if result.exit_code and changes and args.format == "text":
        where = shlex.quote(args.inputs[0]) if len(args.inputs) == 1 else "PATH"
        print(f"next: torchport convert {where} --to {printable(result.target)} -o OUT  (makes the "
              f"{counted(changes, 'change')}; `torchport rules CODE` explains a finding)", file=sys.stderr)
    return result.exit_code


def add(sub) -> None:
    k = sub.add_parser("check", help="exit 1 when files still need converting for a target (CI, pre-commit; "
                                     "read-only)",
                       description="Report what `convert --to TARGET` would change or cannot move in the given files "
                                   "and folders, and exit 1 if there is any (advice is shown as notes and does not "
                                   "fail; files that cannot be parsed do). Writes nothing but -o and --write-baseline. "
                                   "See docs/check.md.")
    k.add_argument("inputs", nargs="+", metavar="INPUT", help="files and folders (Python and shell scripts are checked)")
    k.add_argument("-t", "--to", metavar="TARGET", type=target_name,
                   help="npu, mlu, musa, xpu, mps, cpu, accelerator, or a target .toml file (default: target in "
                        "[tool.torchport] of pyproject.toml; one of them is required)")
    k.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="report format (default: text)")
    k.add_argument("-o", "--output", type=output_path, metavar="FILE", help="write the report to FILE (the summary line still goes "
                                                          "to stdout)")
    k.add_argument("--baseline", metavar="FILE", help="suppress the findings recorded in FILE (default: baseline in "
                                                      "[tool.torchport])")
    k.add_argument("--write-baseline", metavar="FILE", help="record the current findings in FILE (exit 0 unless a "
                                                           "file cannot be parsed)")
    k.add_argument("-e", "--exclude", action="append", metavar="GLOB", help="skip matching files; repeatable")
    k.add_argument("--root", metavar="DIR", help="report paths relative to DIR (default: the current folder when "
                                                 "it holds every INPUT)")
    k.add_argument("-j", "--jobs", type=jobs, metavar="N", help="worker processes (default: CPU count)")
    settings.add_options(k)
    k.set_defaults(func=run)
