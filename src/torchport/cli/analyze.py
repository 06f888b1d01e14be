"""`torchport analyze`: assess a project for one or more targets (read-only)."""
from __future__ import annotations

import json
import os
import shlex
import sys

from ..core.errors import UsageError
from ..core.names import printable
from ..core.words import counted
from .common import jobs, output_path, print_errors, progress, target_list

FAIL_LEVELS = ("blocked", "manual", "review")


def run(args) -> int:
    from ..api import analyze
    from ..report.analysis import READINESS_HEADER, readiness_rows

    path = args.input or args.input_opt
    if not path:
        raise UsageError("analyze needs an INPUT file or folder")
    result = analyze(path, args.to, torch_version=args.torch_version, output=args.output, jobs=args.jobs,
                     exclude=args.exclude or (), force=args.force,
                     progress=None if args.json else progress(), python=args.python)
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        s = result.summary()
        print(f"torchport analyze: {counted(s['files'], 'file')} ({s['python_files']} Python), "
              f"{counted(s['lines'], 'line')} read (C++ and configs too) in {s['elapsed_seconds']:.2f} s")
        print(f"  {counted(s['touchpoints'], 'CUDA touchpoint')}: "
              + ", ".join(f"{k} {v}" for k, v in s["touchpoints_by_group"].items()))
        print(f"  C++/CUDA: {counted(s['cuda_files'], 'CUDA file')}, {counted(s['cuda_kernels'], 'kernel')}, "
              f"{counted(s['exported_ops'], 'exported op')}, {counted(s['extension_call_sites'], 'Python call site')}")
        rows = readiness_rows(result)
        widths = [max(len(str(x)) for x in column) + 2 for column in zip(READINESS_HEADER, *rows)]
        print("  " + "".join(h.ljust(w) for h, w in zip(READINESS_HEADER, widths)))
        for row in rows:
            print("  " + "".join(str(c).ljust(w) for c, w in zip(row, widths)))
        for t, r in result.readiness.items():  # the unit, and what drives the grade
            print(f"  {t}: effort {r.effort:g} fix units (1 per manual item, 1/4 per review item, 10 per blocked "
                  f"item; relative, not hours): {r.drivers_text()}")
        for t in result.targets:  # the words and numbers convert and check print for the same code
            n = result.convert_counts(t)
            print(f"  convert --to {t}: {counted(n['changes'], 'change')}, {n['unsupported']} unsupported, "
                  f"{n['to_review']} to review")
        print("  performance advice: " + ", ".join(f"{t} {n}" for t, n in s["advice"].items()))
        lib = result.libraries
        if lib is not None and (lib.read or lib.missing):
            print(f"  installed libraries: {len(lib.read)} read" + (f", {len(lib.missing)} not installed here"
                                                                   if lib.missing else "")
                  + "; uses reaching CUDA code: " + ", ".join(f"{t} {len(r)}" for t, r in lib.reaches.items()))
        if result.output:
            print(f"  report: {printable(os.path.join(result.output, 'analysis.md'))} (+ report.html, analysis.json, "
                  "cuda_op_list.csv, unknown_api.csv, <target>/unsupported_api.csv, <target>/advice.csv)")
        target = result.targets[0] if len(result.targets) == 1 else "TARGET"
        print(f"next: torchport migrate {shlex.quote(path)} --to {target}")
    errors = [f for f in result.common if f.action == "error"]
    if not args.json:
        print_errors(errors)
    if errors:
        return 1
    if args.fail_on:
        level = FAIL_LEVELS.index(args.fail_on)
        for r in result.readiness.values():
            counts = (r.blocked, r.manual + r.blocked, r.review + r.manual + r.blocked)
            if counts[level]:
                return 1
    return 0


def add(sub) -> None:
    a = sub.add_parser("analyze", help="assess a CUDA project for one or more targets (read-only)",
                       description="Assess how much of a project depends on CUDA and what each target needs. "
                                   "Writes reports to <name>_analysis/ next to INPUT (never inside it).")
    a.add_argument("input", nargs="?", help="file or folder to analyze")
    a.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    a.add_argument("-t", "--to", metavar="T1,T2", type=target_list, help="targets (default: all)")
    a.add_argument("-v", "--torch-version", metavar="X", help="the project's torch version (selects operator data)")
    a.add_argument("-o", "--output", type=output_path, metavar="OUT", help="report folder (default: <name>_analysis)")
    a.add_argument("-e", "--exclude", action="append", metavar="GLOB", help="skip matching files; repeatable")
    a.add_argument("-j", "--jobs", type=jobs, metavar="N", help="worker processes (default: CPU count)")
    a.add_argument("--python", metavar="PATH", help="the interpreter whose installed libraries the project uses "
                   "(default: this one): their CUDA code on the paths the project calls is reported")
    a.add_argument("--fail-on", choices=FAIL_LEVELS, help="exit 1 when any target has blocked / manual+ / review+ items")
    a.add_argument("--force", action="store_true", help="write into an existing report folder")
    a.add_argument("--json", action="store_true", help="print analysis.json to stdout")
    a.set_defaults(func=run)
