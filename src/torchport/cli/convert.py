"""`torchport convert`: rewrite a CUDA project for a target."""
from __future__ import annotations

import functools
import json
import os
import shlex
import sys

from ..core.errors import UsageError
from ..core.names import printable
from ..core.words import counted
from . import settings
from .common import jobs, output_path, print_errors, progress, target_name, write_out


def run(args) -> int:
    from ..api import convert

    path = args.input or args.input_opt
    if not path:
        raise UsageError("convert needs an INPUT file or folder")
    # one file and no -o / --in-place: converted as --dry-run and printed (print_converted; --json: the result),
    # nothing written beside it
    single = os.path.isfile(path) and not (args.output or args.in_place or args.diff or args.dry_run)
    to_stdout = single and not args.json
    conf = settings.resolve(args, [path], "convert")
    selection = settings.selection(args, conf, path if os.path.isdir(path) else os.path.dirname(path) or ".")
    if args.device_env and not args.specify_device:
        raise UsageError("--device-env goes with -s/--specify-device")
    result = convert(path, args.to, args.output, rules=args.rule or (),
                     exclude=[*conf.exclude, *(args.exclude or ())], selection=selection,
                     launch=args.launch, jobs=args.jobs, in_place=args.in_place, diff=args.diff,
                     dry_run=args.dry_run or single, force=args.force, report_dir=args.report_dir,
                     progress=None if args.json or args.diff or to_stdout else progress(), distributed=args.distributed,
                     main=args.main, model_var=args.model_var, loader_var=args.loader_var,
                     specify_device=(args.device_env or "NPU_CALCULATE_DEVICE") if args.specify_device else None,
                     similar=args.similar, runtime_shim=args.runtime_shim, cache=not args.no_cache)
    errors = [f for f in result.findings if f.action == "error"]
    settings.print_warnings(result.findings)
    if to_stdout:
        return print_converted(args, path, result)
    if args.diff:
        write_out(result.diff)
        return 1 if errors else 0
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
        return 1 if errors else 0
    s = result.summary()
    status = ", ".join(f"{v} {k}" for k, v in s["files_by_status"].items())
    print(f"torchport convert --to {printable(result.target)}: {counted(s['files'], 'file')} ({status}), "
          f"{counted(s['lines'], 'line')} of code inspected in {s['elapsed_seconds']:.2f} s"
          + (f" ({counted(result.reused, 'file')} as in the last run, not converted again; --no-cache converts all)"
             if result.reused else ""))
    print(f"  {counted(s['changes'], 'change')}, {s['unsupported']} unsupported, {s['advice']} to review, "
          f"{counted(s['errors'], 'error')}"
          + (f", {s['suppressed']} suppressed (`# torchport: ignore` or rule selection; left as written)"
             if s["suppressed"] else ""))
    if s["unscanned_cuda_files"]:
        print(f"  {s['unscanned_cuda_files']} other {'file mentions' if s['unscanned_cuda_files'] == 1 else 'files mention'} CUDA (docs, configs, Dockerfiles...): copied "
              "unchanged, not converted; the report lists them")
    if result.output:
        print(f"  converted copy: {printable(result.output)}")
    settled = getattr(result, "settled", None)
    if args.force and settled is not None and settled.replaced:  # what --force replaced there (core/manifest.py)
        print(f"  --force: {printable(settled.output)}: {settled.line()}")
    if result.backup:
        print(f"  originals backed up in: {printable(result.backup)}")
    if any(r.status == "created" for r in result.files) and result.mode in ("write", "in-place"):
        where = result.output or result.input
        folder = where if os.path.isdir(where) else os.path.dirname(where) or "."
        print(f"  start it on every device: bash {printable(os.path.join(folder, 'run_distributed.sh'))} [-n N]")
    if result.report_dir:
        print(f"  reports: {printable(os.path.join(result.report_dir, 'report.md'))} (+ report.html, change_list.csv, "
              "unsupported_api.csv, report.json)")
    if result.output and not errors:
        left = f" ({s['unsupported']} unsupported left: unsupported_api.csv)" if s["unsupported"] else ""
        print(f"next: torchport check {shlex.quote(result.output)} --to {printable(result.target)}{left}")
    print_errors(errors)
    return 1 if errors else 0


def print_converted(args, path: str, result) -> int:
    """`convert FILE` without -o or --in-place (converted as --dry-run): the converted file goes to stdout
    (`> new.py` keeps it), the summary and every finding's note to stderr, and nothing is written beside the
    source (reports only with --report-dir).  A tree gets a mirrored copy; one file is a filter, as `--diff` is,
    so no stray `<name>_<target>.py` appears unasked."""
    if args.distributed:  # its checks ran (and passed); the launcher is a second file, which stdout cannot hold
        raise UsageError("--distributed also writes run_distributed.sh: give -o OUTPUT.py (or --in-place)")
    converted = next((r for r in result.files if r.path == os.path.basename(path)), None)
    if converted is not None and converted.new_text is not None:
        write_out(converted.new_text)
    else:  # unchanged, or copied unchanged (an error): the file as it is
        sys.stdout.flush()
        with open(path, "rb") as f:
            sys.stdout.buffer.write(f.read())
    sys.stdout.flush()
    s = result.summary()
    errors = [f for f in result.findings if f.action == "error"]
    say = functools.partial(print, file=sys.stderr)
    say(f"torchport convert --to {printable(result.target)}: {printable(path)} -> stdout (nothing written; -o FILE "
        f"or --in-place to write): {counted(s['changes'], 'change')}, {s['unsupported']} unsupported, "
        f"{s['advice']} to review, {counted(s['errors'], 'error')}")
    for f in result.findings:
        if f.message and f.action != "error":
            say(f"  {printable(f.file)}:{f.line}: {f.rule} {f.action}: {printable(f.message)}")
    if result.report_dir:
        say(f"  reports: {printable(os.path.join(result.report_dir, 'report.md'))}")
    for f in errors:
        say(f"  error: {printable(f.file)}:{f.line}: {printable(f.message)}")
    return 1 if errors else 0


def add(sub) -> None:
    c = sub.add_parser("convert", help="rewrite a CUDA project (file or folder) for a target",
                       description="Rewrite a CUDA PyTorch project for another accelerator. A folder: writes a "
                                   "mirrored copy <name>_<target> next to INPUT and reports in <output>_report/. A "
                                   "single file: prints the converted file (the summary and notes go to stderr) and "
                                   "writes nothing unless -o or --in-place asks.")
    c.add_argument("input", nargs="?", help="file or folder to convert")
    c.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    c.add_argument("-t", "--to", metavar="TARGET", type=target_name,
                   help="npu, mlu, musa, xpu, mps, cpu, accelerator, or a target .toml file (default: target in "
                        "[tool.torchport] of pyproject.toml; one of them is required)")
    c.add_argument("-o", "--output", type=output_path, help="output file/folder (default: a folder INPUT gets <name>_<target> next to it; a file "
                                                  "is printed to stdout)")
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
    c.add_argument("--no-cache", action="store_true",
                   help="convert every file again (default: a file unchanged since the last run of this input and "
                        "target takes that run's result)")
    c.add_argument("-s", "--specify-device", action="store_true",
                   help="the launch script (--launch, or INPUT when it is a file) sets its device index from an "
                        "environment variable (--device-env), as Ascend's migration tool's -s does; not with "
                        "--distributed")
    c.add_argument("--device-env", metavar="NAME",
                   help="the variable -s reads (default: NPU_CALCULATE_DEVICE, 0 when unset)")
    c.add_argument("--runtime-shim", action="store_true",
                   help="entry scripts (a `__main__` block) import the target's run-time mapping first, for the "
                        "CUDA code of the libraries the project calls (TP003: import torchport.auto; on npu "
                        "from torch_npu.contrib import transfer_to_npu)")
    c.add_argument("-sim", "--similar", action="store_true",
                   help="replace some APIs the target does not support by APIs of a similar function, as Ascend's "
                        "migration tool's -sim does; each swap is reported (TP123) with what changes, e.g. "
                        "torch.cuda.nvtx.range -> torch.profiler.record_function (kb/similar.toml)")
    c.add_argument("--json", action="store_true", help="print the result as JSON")
    settings.add_options(c)
    d = c.add_argument_group("single device to multi-device (see docs/distributed.md)")
    d.add_argument("--distributed", action="store_true",
                   help="also make the training script --main run one process per device (torchrun + DDP) and "
                        "write run_distributed.sh")
    d.add_argument("--main", metavar="SCRIPT", help="the training script (relative to INPUT); default: INPUT itself")
    d.add_argument("--model-var", default="model", metavar="NAME", help="the model's variable (default: model)")
    d.add_argument("--loader-var", metavar="NAME", help="the training DataLoader's variable, when there are several")
    c.set_defaults(func=run)
