"""`torchport port-ext`: port CUDA C++ extensions and their build glue."""
from __future__ import annotations

import json
import os
import shlex
import sys

from ..core.errors import UsageError
from ..core.names import printable
from ..core.words import counted
from .common import jobs, output_path, print_errors, progress, target_name, write_out


def run(args) -> int:
    from ..api import port_ext as port

    path = args.input or args.input_opt
    if not path:
        raise UsageError("port-ext needs an INPUT file or folder")
    result = port(path, args.to, args.output, maps=args.map or (), ignore=args.ignore, in_place=args.in_place,
                  diff=args.diff, force=args.force, report_dir=args.report_dir, jobs=args.jobs,
                  progress=None if args.json or args.diff else progress())
    errors = [f for f in result.findings if f.action == "error"]
    if args.diff:
        write_out("".join(r.diff for r in result.files))
        return 1 if errors else 0
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 1 if errors else 0
    cpu_only = result.cpu_only()
    if cpu_only:
        from ..commands.port import nothing_to_port

        print(f"torchport port-ext --to {printable(result.target)}: {nothing_to_port(cpu_only)}")
        glue = [r.path for r in result.files if r.status == "ported"]
        if glue:
            print(f"  build files adapted all the same: {', '.join(printable(p) for p in glue)} (see the report)")
        if result.output:
            print(f"  copy: {printable(result.output)}")
    elif result.mode == "inventory":
        inv = result.inventory
        print(f"torchport port-ext --to {printable(result.target)}: inventory only (kernels must be rewritten): "
              f"{counted(len(inv['kernels']), 'kernel')} in {counted(inv['cuda_files'], 'CUDA file')}, "
              f"{counted(len(inv['launches']), 'launch site')}, "
              f"{counted(len(inv['pybind_ops']) + sum(len(v) for v in inv['library_ops'].values()), 'exported op')}, "
              f"{counted(len(inv['python_calls']), 'Python call site')}")
    else:
        t = result.totals()
        print(f"torchport port-ext --to {printable(result.target)}: {counted(t['files'], 'file')}, "
              f"{counted(t['converted_refs'], 'reference')} converted, {t['left_refs']} left, {t['unsupported']} "
              f"unsupported, {t['needs_review']} to review, {counted(t['renamed_files'], 'file')} renamed in "
              f"{t['elapsed_seconds']:.2f} s")
        print(f"  project includes: {t['includes_checked']} checked, "
              + (f"{t['includes_broken']} NO LONGER RESOLVE (see the report)" if t["includes_broken"] else "all resolve"))
        if result.output:
            print(f"  ported copy: {printable(result.output)}")
        settled = getattr(result, "settled", None)
        if args.force and settled is not None and settled.replaced:  # what --force replaced (core/manifest.py)
            print(f"  --force: {printable(settled.output)}: {settled.line()}")
        if result.backup:
            print(f"  originals backed up in: {printable(result.backup)}")
    if result.report_dir:
        print(f"  report: {printable(os.path.join(result.report_dir, 'port_report.md'))} (+ report.html, "
              "port_report.json, port_stats.csv)")
    print_errors(errors)
    step = None if errors or cpu_only else next_step(result)
    if step:
        print(f"next: {step}")
    return 1 if errors else 0


def next_step(result) -> str:
    """The natural next step after a port: rewrite the kernels listed (inventory), fix what the port left, or
    build the ported copy on the target's machine."""
    report = printable(os.path.join(result.report_dir, "port_report.md")) if result.report_dir else ""
    if result.mode == "inventory":
        n = len(result.inventory["kernels"])
        return (f"rewrite the {counted(n, 'kernel')} for {printable(result.target)} (the list: {report}); "
                "`torchport migrate PROJECT --to " + printable(result.target) + "` lists them with the Python left")
    t = result.totals()
    folder = result.output or result.input
    if not folder or not os.path.isdir(folder):
        return ""
    left = t["unsupported"] + t["left_refs"] + t["includes_broken"]
    build = (f"cd {shlex.quote(folder)} && python setup.py build_ext --inplace" if
             os.path.isfile(os.path.join(folder, "setup.py")) else
             f"build {shlex.quote(folder)} with torch.utils.cpp_extension")
    if left:
        return f"fix the {left} left (unsupported, unmapped or broken includes: {report}), then: {build}"
    where = f"on a machine with the {printable(result.target)} toolkit: {build}"
    return f"review the {t['needs_review']} flagged ({report}), then {where}" if t["needs_review"] else where


def add(sub) -> None:
    p = sub.add_parser("port-ext", help="port CUDA C++ extension sources and their build glue",
                       description="Port CUDA C/C++ extension sources (.cu .cuh .cpp .h ...), CMake and setup.py "
                                   "to MUSA or HIP; for npu/mlu write an inventory of the kernels to rewrite.")
    p.add_argument("input", nargs="?", help="file or folder")
    p.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    p.add_argument("-t", "--to", required=True, metavar="TARGET", type=target_name, help="musa, hip, npu or mlu")
    p.add_argument("-o", "--output", type=output_path, help="output folder (default: <name>_<target> next to INPUT)")
    p.add_argument("-m", "--map", action="append", metavar="MAP.json", help="extra mapping table; repeatable")
    p.add_argument("--ignore", action="append", metavar="GLOB",
                   help="copy matching files unchanged (default: other vendors' mlu/ npu/ mps/ parrots/ subtrees)")
    p.add_argument("-j", "--jobs", type=jobs, metavar="N", help="worker processes (default: CPU count)")
    p.add_argument("--report-dir", metavar="DIR", help="where reports go (default: <output>_port_report)")
    pm = p.add_mutually_exclusive_group()
    pm.add_argument("--in-place", action="store_true", help="rewrite INPUT itself, keeping a backup")
    pm.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    p.add_argument("--force", action="store_true", help="write into an existing output or report folder")
    p.add_argument("--json", action="store_true", help="print the result as JSON")
    p.set_defaults(func=run)
