"""`torchport convert`: rewrite a CUDA project for a target."""
from __future__ import annotations

import json
import os
import sys

from ..core.errors import UsageError
from ..core.names import printable
from .common import target_name, jobs, print_errors, progress, write_out


def run(args) -> int:
    from ..api import convert

    path = args.input or args.input_opt
    if not path:
        raise UsageError("convert needs an INPUT file or folder")
    result = convert(path, args.to, args.output, rules=args.rule or (), exclude=args.exclude or (),
                     launch=args.launch, jobs=args.jobs, in_place=args.in_place, diff=args.diff,
                     dry_run=args.dry_run, force=args.force, report_dir=args.report_dir,
                     progress=None if args.json or args.diff else progress(), distributed=args.distributed,
                     main=args.main, model_var=args.model_var, loader_var=args.loader_var)
    errors = [f for f in result.findings if f.action == "error"]
    if args.diff:
        write_out(result.diff)
        return 1 if errors else 0
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 1 if errors else 0
    s = result.summary()
    status = ", ".join(f"{v} {k}" for k, v in s["files_by_status"].items())
    print(f"torchport convert --to {printable(result.target)}: {s['files']} files ({status}), {s['lines']} lines "
          f"in {s['elapsed_seconds']:.2f} s")
    print(f"  {s['changes']} changes, {s['unsupported']} unsupported, {s['advice']} to review, {s['errors']} errors")
    if s["unscanned_cuda_files"]:
        print(f"  {s['unscanned_cuda_files']} other files mention CUDA (docs, configs, Dockerfiles...): copied "
              "unchanged, not converted; the report lists them")
    if result.output:
        print(f"  converted copy: {printable(result.output)}")
    if result.backup:
        print(f"  originals backed up in: {printable(result.backup)}")
    if any(r.status == "created" for r in result.files) and result.mode in ("write", "in-place"):
        where = result.output or result.input
        folder = where if os.path.isdir(where) else os.path.dirname(where) or "."
        print(f"  start it on every device: bash {printable(os.path.join(folder, 'run_distributed.sh'))} [-n N]")
    if result.report_dir:
        print(f"  reports: {printable(os.path.join(result.report_dir, 'report.md'))} (+ report.html, change_list.csv, "
              "unsupported_api.csv, report.json)")
    print_errors(errors)
    return 1 if errors else 0


def add(sub) -> None:
    c = sub.add_parser("convert", help="rewrite a CUDA project (file or folder) for a target",
                       description="Rewrite a CUDA PyTorch project for another accelerator. By default writes a "
                                   "mirrored copy <name>_<target> next to INPUT and reports in <output>_report/.")
    c.add_argument("input", nargs="?", help="file or folder to convert")
    c.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    c.add_argument("-t", "--to", required=True, metavar="TARGET", type=target_name,
                   help="npu, mlu, musa, xpu, mps, cpu, accelerator, or a target .toml file")
    c.add_argument("-o", "--output", help="output file/folder (default: <name>_<target> next to INPUT)")
    c.add_argument("-r", "--rule", action="append", metavar="RULES", help="user rule file (Ascend JSON or torchport TOML/JSON); repeatable")
    c.add_argument("-e", "--exclude", action="append", metavar="GLOB", help="copy matching files unchanged; repeatable")
    c.add_argument("-l", "--launch", metavar="LAUNCH", help="entry script: always gets the registration import")
    c.add_argument("-j", "--jobs", type=jobs, metavar="N", help="worker processes (default: CPU count)")
    c.add_argument("--report-dir", metavar="DIR", help="where reports go (default: <output>_report)")
    mode = c.add_mutually_exclusive_group()
    mode.add_argument("--in-place", action="store_true", help="rewrite INPUT itself, keeping a backup")
    mode.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    mode.add_argument("--dry-run", action="store_true", help="report what would change, write nothing")
    c.add_argument("--force", action="store_true", help="write into an existing output or report folder")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    d = c.add_argument_group("single device to multi-device (see docs/distributed.md)")
    d.add_argument("--distributed", action="store_true",
                   help="also make the training script --main run one process per device (torchrun + DDP) and "
                        "write run_distributed.sh")
    d.add_argument("--main", metavar="SCRIPT", help="the training script (relative to INPUT); default: INPUT itself")
    d.add_argument("--model-var", default="model", metavar="NAME", help="the model's variable (default: model)")
    d.add_argument("--loader-var", metavar="NAME", help="the training DataLoader's variable, when there are several")
    c.set_defaults(func=run)
