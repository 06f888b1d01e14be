"""The `torchport` command line: thin subcommands over the Python API.

Exit codes, the same for every command (docs/cli.md):
  0    done, nothing to report
  1    done, with findings or errors: what the command fails on (check: code to convert; convert,
       port-ext, analyze: a file it could not process; doctor: a failed check; ...), or its output
       could not be delivered in full (stdout closed early, `| head`: stops quietly)
  2    not done: bad usage or input, or the environment refused (a path that cannot be read or
       written, a full disk); one line on stderr, naming the path
  3    an internal error (a torchport bug): one line naming the command; TORCHPORT_DEBUG=1 adds
       the traceback
  130  interrupted (Ctrl-C): one line, no traceback
`run`, `sim`, `profile` and `ops record` exit with the code of the program they ran (their own
usage errors are still 2).  Names that come from the user's files (paths, op names, log lines) are
printed through `core.names.printable`, so they cannot forge output lines or drive the terminal.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import traceback
from collections import Counter

from . import __version__
from .core.errors import UsageError
from .core.names import printable


def write_out(text: str) -> None:
    """Print a long output (a diff, a report) in pieces.  Under PYTHONUNBUFFERED (python -u) one large
    write into a pipe whose reader has gone (`| head`) is cut short without an error; in pieces, the next
    piece fails with BrokenPipeError, and the exit code says the output was not all delivered."""
    piece = 8192
    for start in range(0, len(text), piece):
        sys.stdout.write(text[start:start + piece])


def _progress():
    if not sys.stderr.isatty():
        return None
    state = {"last": -1}

    def show(done, total):
        pct = done * 100 // max(total, 1)
        if pct != state["last"] or done == total:
            state["last"] = pct
            bar = "#" * (pct // 4)
            sys.stderr.write(f"\r[{bar:<25}] {done}/{total} files")
            if done == total:
                sys.stderr.write("\r" + " " * 50 + "\r")
            sys.stderr.flush()
    return show


def cmd_convert(args) -> int:
    from .converter.api import convert

    path = args.input or args.input_opt
    if not path:
        raise UsageError("convert needs an INPUT file or folder")
    result = convert(path, args.to, args.output, rules=args.rule or (), exclude=args.exclude or (),
                     launch=args.launch, jobs=args.jobs, in_place=args.in_place, diff=args.diff,
                     dry_run=args.dry_run, force=args.force, report_dir=args.report_dir,
                     progress=None if args.json or args.diff else _progress(), distributed=args.distributed,
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


def print_errors(findings) -> None:
    """One line per file a command could not process: `  error: file:line: message`."""
    for f in findings:
        print(f"  error: {printable(f.file)}:{f.line}: {printable(f.message)}")


FAIL_LEVELS = ("blocked", "manual", "review")


def cmd_analyze(args) -> int:
    from .analyze.api import analyze
    from .report.analysis import READINESS_HEADER, readiness_rows

    path = args.input or args.input_opt
    if not path:
        raise UsageError("analyze needs an INPUT file or folder")
    result = analyze(path, args.to, torch_version=args.torch_version, output=args.output, jobs=args.jobs,
                     exclude=args.exclude or (), force=args.force,
                     progress=None if args.json else _progress())
    if args.json:
        json.dump(result.to_dict(), sys.stdout, indent=1, ensure_ascii=False)
        sys.stdout.write("\n")
    else:
        s = result.summary()
        print(f"torchport analyze: {s['files']} files ({s['python_files']} Python), {s['lines']} lines "
              f"in {s['elapsed_seconds']:.2f} s")
        print(f"  {s['touchpoints']} CUDA touchpoints: "
              + ", ".join(f"{k} {v}" for k, v in s["touchpoints_by_group"].items()))
        print(f"  C++/CUDA: {s['cuda_files']} CUDA files, {s['cuda_kernels']} kernels, "
              f"{s['exported_ops']} exported ops, {s['extension_call_sites']} Python call sites")
        rows = readiness_rows(result)
        widths = [max(len(str(x)) for x in column) + 2 for column in zip(READINESS_HEADER, *rows)]
        print("  " + "".join(h.ljust(w) for h, w in zip(READINESS_HEADER, widths)))
        for row in rows:
            print("  " + "".join(str(c).ljust(w) for c, w in zip(row, widths)))
        for t in result.targets:  # the words and numbers convert and check print for the same code
            n = Counter(f.action for f in result.target_findings(t))
            print(f"  convert --to {t}: {sum(n[a] for a in ('insert', 'modify', 'delete'))} changes, "
                  f"{n['unsupported']} unsupported, {n['advice']} to review")
        if result.output:
            print(f"  report: {printable(os.path.join(result.output, 'analysis.md'))} (+ report.html, analysis.json, "
                  "cuda_op_list.csv, unknown_api.csv, <target>/unsupported_api.csv)")
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


def cmd_check(args) -> int:
    from .check.api import check, write_baseline, write_output

    result = check(args.inputs, args.to, exclude=args.exclude or (), root=args.root, baseline=args.baseline,
                   jobs=args.jobs, keep_edits=args.format == "sarif", progress=_progress())
    if args.format == "sarif":
        from .check.sarif import to_sarif

        report = json.dumps(to_sarif(result), indent=1, ensure_ascii=False) + "\n"
    elif args.format == "json":
        report = json.dumps(result.to_dict(), indent=1, ensure_ascii=False) + "\n"
    else:
        report = result.text()
    if args.output:
        write_output(result, args.output, report)
        print(result.summary_line())
    else:
        write_out(report)
    if args.write_baseline:
        n = write_baseline(result, args.write_baseline)
        print(f"  baseline: {n} findings recorded in {printable(args.write_baseline)}", file=sys.stderr)
        return 1 if result.summary()["errors"] else 0
    return result.exit_code


def cmd_ops_check(args) -> int:
    from dataclasses import replace

    from .backends import load_target
    from .kb.operators import CPU_ONLY, FALLBACK, MISSING, check, load_ops_file, recorded_torch

    target = load_target(args.to)
    rows = load_ops_file(args.ops)
    recorded = recorded_torch(args.ops)
    ops, results = check(rows, target, args.torch_version or recorded)
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
        print(f"torchport ops check --to {printable(target.name)}: {len(results)} ops{by}, data: {where}")
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


def cmd_port_ext(args) -> int:
    from .porting.api import port

    path = args.input or args.input_opt
    if not path:
        raise UsageError("port-ext needs an INPUT file or folder")
    result = port(path, args.to, args.output, maps=args.map or (), ignore=args.ignore, in_place=args.in_place,
                  diff=args.diff, force=args.force, report_dir=args.report_dir, jobs=args.jobs,
                  progress=None if args.json or args.diff else _progress())
    errors = [f for f in result.findings if f.action == "error"]
    if args.diff:
        write_out("".join(r.diff for r in result.files))
        return 1 if errors else 0
    if args.json:
        json.dump(result.to_dict(), sys.stdout, ensure_ascii=False)
        sys.stdout.write("\n")
        return 1 if errors else 0
    if result.mode == "inventory":
        inv = result.inventory
        print(f"torchport port-ext --to {printable(result.target)}: inventory only (kernels must be rewritten): "
              f"{len(inv['kernels'])} kernels in {inv['cuda_files']} CUDA files, {len(inv['launches'])} launch sites, "
              f"{len(inv['pybind_ops']) + sum(len(v) for v in inv['library_ops'].values())} exported ops, "
              f"{len(inv['python_calls'])} Python call sites")
    else:
        t = result.totals()
        print(f"torchport port-ext --to {printable(result.target)}: {t['files']} files, {t['converted_refs']} references converted, "
              f"{t['left_refs']} left, {t['unsupported']} unsupported, {t['needs_review']} to review, "
              f"{t['renamed_files']} files renamed in {t['elapsed_seconds']:.2f} s")
        print(f"  project includes: {t['includes_checked']} checked, "
              + (f"{t['includes_broken']} NO LONGER RESOLVE (see the report)" if t["includes_broken"] else "all resolve"))
        if result.output:
            print(f"  ported copy: {printable(result.output)}")
        if result.backup:
            print(f"  originals backed up in: {printable(result.backup)}")
    if result.report_dir:
        print(f"  report: {printable(os.path.join(result.report_dir, 'port_report.md'))} (+ report.html, "
              "port_report.json, port_stats.csv)")
    print_errors(errors)
    return 1 if errors else 0


def cmd_run(args) -> int:
    from .runtime.launch import run

    simulate = None
    if args.simulate:
        simulate = {"devices": args.devices, "cpu_fallback": args.cpu_fallback}
    elif args.devices != 1 or args.cpu_fallback:
        raise UsageError("--devices and --cpu-fallback need --simulate")
    return run(args.to, args.argv, module=args.module, report=args.report, policy=args.policy,
               on_missing=args.on_missing, simulate=simulate)


def cmd_sim(args) -> int:
    from .sim import launch

    if args.build:
        return launch.build(verbose=args.verbose)
    if not args.to:
        raise UsageError("sim needs --to TARGET (npu, mlu or musa)")
    return launch.run(args.to, args.sim_command, devices=args.devices, cpu_fallback=args.cpu_fallback, rng=args.rng,
                      torch_version=args.torch_version, report=args.report)


_RUN_VALUED = ("--to", "-t", "--report", "--policy", "--on-missing", "--devices")


def split_run_argv(argv: list) -> tuple:
    """`run`'s own options, and the command that follows them (script or -m module, with its
    arguments, which may look like options: they belong to the script)."""
    i = 1
    while i < len(argv):
        token = argv[i]
        if token == "-m":
            return argv[:i + 2], argv[i + 2:]
        if token == "--":
            return argv[:i], argv[i + 1:]
        if token.split("=", 1)[0] in _RUN_VALUED:
            i += 1 if "=" in token else 2
            continue
        if token in ("-h", "--help", "--simulate", "--cpu-fallback"):
            i += 1
            continue
        return argv[:i], argv[i:]
    return argv, []


_SCRIPT_VALUED = {"ops": ("-o", "--output", "--steps", "-t", "--to"),
                  "profile": ("-o", "--output", "-t", "--to", "--steps", "--wait", "--warmup", "--step-fn", "--window")}


def split_script_argv(argv: list) -> tuple:
    """`ops record`'s or `profile`'s own options, and the command after them: after `--` or, when `--`
    was left out, from the first word that is not an option (`python`, the script, -m); what follows
    belongs to the script."""
    i = 2 if argv[0] == "ops" else 1
    while i < len(argv):
        token = argv[i]
        if token == "--":
            return argv[:i], argv[i + 1:]
        if token.split("=", 1)[0] in _SCRIPT_VALUED[argv[0]]:
            i += 1 if "=" in token else 2
        elif token.startswith("-") and token != "-m":  # -h, -oDIR, an unknown option: argparse judges
            i += 1
        else:
            break
    return argv[:i], argv[i:]


def cmd_ops_record(args) -> int:
    from .debug.record_cli import record_script

    code, recorder, path = record_script(args.script_command, args.output, steps=args.steps, target=args.to)
    data = recorder.to_dict()
    print(f"torchport ops record: {data['total_calls']} op calls, {len(data['ops'])} distinct ops, "
          f"{data['steps']} steps -> {printable(path)}", file=sys.stderr)
    print(f"  next: torchport ops check {printable(path)} --to TARGET", file=sys.stderr)
    return code


def cmd_profile(args) -> int:
    if not args.output:
        raise UsageError("profile needs -o DIR")
    from .profile import profile_script

    code, profiler = profile_script(args.script_command, args.output, target=args.to, steps=args.steps, wait=args.wait,
                                    warmup=args.warmup, step_fn=args.step_fn, window=args.window)
    r = profiler.result
    if r is None:
        print(f"torchport profile: no step was profiled: {printable(profiler.why_empty)}", file=sys.stderr)
        return code or 1
    s = r["steps"]
    print(f"torchport profile: {s['profiled']} steps (one step = one {printable(s['step_by'])}), mean "
          f"{s['mean_wall_step_us'] / 1e3:.2f} ms, {len(r['ops'])} ops; {r['bound']}", file=sys.stderr)
    print(f"  {printable(os.path.join(args.output, 'summary.md'))} (+ ops.csv, trace.json, profile.json)",
          file=sys.stderr)
    return code


def cmd_profile_diff(args) -> int:
    from .profile import diff

    paths, output = [args.a, args.b], args.output
    result = diff.diff(diff.load(paths[0]), diff.load(paths[1]))
    print(f"torchport profile diff: step speedup A/B {result['step_speedup_a_over_b']}; "
          f"added in B: {printable(', '.join(result['added'])) or 'none'}; "
          f"removed: {printable(', '.join(result['removed'])) or 'none'}")
    for r in result["ops"][:5]:
        print(f"  {printable(r['op'])}: {r['a_us_per_step']:.1f} -> {r['b_us_per_step']:.1f} us/step ({r['status']})")
    if output:
        written = diff.write(result, output, paths[0], paths[1])
        print(f"  report: {', '.join(printable(p) for p in written)}")
    return 0


def cmd_doctor(args) -> int:
    from .backends import load_target
    from .doctor import FAIL, run_checks

    name = args.to or os.environ.get("TORCHPORT_TARGET") or _installed_target()
    rows = run_checks(load_target(name))
    if args.json:
        json.dump({"target": name, "checks": [r.to_dict() for r in rows]}, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        marks = {"ok": "ok  ", "warn": "WARN", "fail": "FAIL", "skip": "skip"}
        print(f"torchport doctor --to {printable(name)}")
        for r in rows:
            print(f"  {marks[r.status]}  {r.name}: {printable(r.detail)}")
            if r.fix and r.status in ("warn", "fail"):
                print(f"        fix: {printable(r.fix)}")
        counts = Counter(r.status for r in rows)
        print(f"  {counts['fail']} failed, {counts['warn']} warnings, {counts['ok']} ok")
    return 1 if any(r.status == FAIL for r in rows) else 0


def _jobs(text: str) -> int:
    """-j N: a whole number of worker processes, at least 1."""
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"needs at least 1 worker, got {n}")
    return n


def cmd_explain(args) -> int:
    from .doctor.explain import explain

    if args.to:
        from .backends import load_target

        load_target(args.to)  # an unknown target is a usage error, not a filter that matches nothing
    if args.file:
        from .core.files import read_data

        text = read_data(args.file, "log", pipes=True).decode("utf-8", errors="replace")
    else:
        text = " ".join(args.text)
    matches, nearest = explain(text, target=args.to)
    if args.json:
        rows = [{"id": m.error.id, "line": m.line, "text": m.text, "score": m.score, "title": m.error.title,
                 "cause": m.error.cause, "fix": m.error.fix, "source": m.error.source} for m in matches or nearest]
        json.dump({"known": bool(matches), "matches": rows}, sys.stdout, indent=1)
        sys.stdout.write("\n")
        return 0 if matches else 1
    for m in matches:
        e = m.error
        where = f" (line {m.line})" if args.file else ""
        print(f"{e.title} [{e.id}, {e.target}]{where}")
        if args.file:
            print(f"  > {printable(m.text[:200])}")
        print(f"  cause: {e.cause}")
        print(f"  fix:   {e.fix}")
        print(f"  source: {e.source}" + ("  (weak: the source shows this error only as a screenshot or without a "
                                         "cause; the advice is ours)" if e.confidence == "weak" else ""))
    if not matches:
        print("not a known error; the nearest known ones:")
        for m in nearest:
            print(f"  {m.score:.2f}  {m.error.title} [{m.error.id}]")
            print(f"        fix: {m.error.fix}")
    return 0 if matches else 1


def _installed_target() -> str:
    """The first installed vendor stack (found, not imported), else cpu."""
    import importlib.util

    from .backends import load_target

    for name in ("npu", "mlu", "musa"):
        if importlib.util.find_spec(load_target(name).register) is not None:
            return name
    return "cpu"


def cmd_compare(args) -> int:
    from .debug.runs import compare_runs, summary, write_comparison

    result = compare_runs(args.a, args.b, rank=args.rank, rtol=args.rtol)
    print(f"torchport compare: {len(result.compared)} aligned outputs, {len(result.failed)} failed, "
          f"{result.only_a} only in A, {result.only_b} only in B")
    for line in summary(result, printable):
        print(f"  {line}")
    if args.output:
        folder = write_comparison(result, args.output, args.a, args.b)
        print(f"  report: {printable(os.path.join(folder, 'compare.md'))} (+ compare.csv)")
    return 1 if result.failed or not result.compared else 0


def cmd_debug(args) -> int:
    from .debug import script

    if args.debug_command == "dump":
        code, dumper, step = script.dump_script(args.script_command, args.output, tensors=args.tensors,
                                                steps=args.steps, target=args.to)
        print(f"torchport debug dump: {dumper.entries} entries (op outputs, parameters, gradients) in "
              f"{dumper.steps_dumped} steps (a step: {step}) -> {printable(str(dumper.folder / 'ops.jsonl'))}",
              file=sys.stderr)
        print(f"  next: torchport compare A_DUMP {printable(args.output)}", file=sys.stderr)
        return code
    code, tracker, step = script.nan_script(args.script_command, steps=args.steps, check_every=args.check_every,
                                            target=args.to)
    print(f"torchport debug nan: {printable(tracker.describe())}; {tracker.nonfinite_outputs} op calls output "
          f"NaN/Inf (a step: {step})", file=sys.stderr)
    return code or (1 if tracker.first is not None or tracker.nonfinite_outputs else 0)


def cmd_rules(args) -> int:
    from .converter.rules_doc import rules_markdown, rules_table

    if args.markdown:
        write_out(rules_markdown())
    elif args.json:
        json.dump(rules_table(), sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rules_table():
            print(f"{r['id']:6} {r['category']:14} {r['name']:26} {r['summary']}")
    return 0


def cmd_targets(args) -> int:
    from .backends import available_targets, load_target

    rows = []
    for name in available_targets():
        t = load_target(name)
        rows.append({"name": t.name, "title": t.title, "device": t.device or t.device_expr,
                     "namespace": t.namespace, "register": t.register, "backend": t.backend_expr or t.backend,
                     "visible_devices_env": t.visible_devices_env, "smi": t.smi, "api": t.api_source})
    if args.json:
        json.dump(rows, sys.stdout, indent=1)
        sys.stdout.write("\n")
    else:
        for r in rows:
            extra = f"import {r['register']}" if r["register"] else "built into PyTorch"
            print(f"{r['name']:12} {r['title']:36} {r['namespace']:18} backend {r['backend'][:12]:12} {extra}")
    return 0


class Parser(argparse.ArgumentParser):
    """argparse, with its errors turned into UsageError: one line on stderr and exit 2, like every other
    usage error (argparse's own would print the usage block first)."""

    def error(self, message):
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def build_parser() -> argparse.ArgumentParser:
    ap = Parser(prog="torchport", description="Move CUDA PyTorch projects to other accelerators.")
    ap.add_argument("--version", action="version", version=f"torchport {__version__}")
    sub = ap.add_subparsers(dest="command", metavar="COMMAND")

    c = sub.add_parser("convert", help="rewrite a CUDA project (file or folder) for a target",
                       description="Rewrite a CUDA PyTorch project for another accelerator. By default writes a "
                                   "mirrored copy <name>_<target> next to INPUT and reports in <output>_report/.")
    c.add_argument("input", nargs="?", help="file or folder to convert")
    c.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    c.add_argument("-t", "--to", required=True, metavar="TARGET",
                   help="npu, mlu, musa, xpu, mps, cpu, accelerator, or a target .toml file")
    c.add_argument("-o", "--output", help="output file/folder (default: <name>_<target> next to INPUT)")
    c.add_argument("-r", "--rule", action="append", metavar="RULES", help="user rule file (Ascend JSON or torchport TOML/JSON); repeatable")
    c.add_argument("-e", "--exclude", action="append", metavar="GLOB", help="copy matching files unchanged; repeatable")
    c.add_argument("-l", "--launch", metavar="LAUNCH", help="entry script: always gets the registration import")
    c.add_argument("-j", "--jobs", type=_jobs, metavar="N", help="worker processes (default: CPU count)")
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
    c.set_defaults(func=cmd_convert)

    a = sub.add_parser("analyze", help="assess a CUDA project for one or more targets (read-only)",
                       description="Assess how much of a project depends on CUDA and what each target needs. "
                                   "Writes reports to <name>_analysis/ next to INPUT (never inside it).")
    a.add_argument("input", nargs="?", help="file or folder to analyze")
    a.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    a.add_argument("-t", "--to", metavar="T1,T2", help="targets (default: all)")
    a.add_argument("-v", "--torch-version", metavar="X", help="the project's torch version (selects operator data)")
    a.add_argument("-o", "--output", metavar="OUT", help="report folder (default: <name>_analysis)")
    a.add_argument("-e", "--exclude", action="append", metavar="GLOB", help="skip matching files; repeatable")
    a.add_argument("-j", "--jobs", type=_jobs, metavar="N", help="worker processes (default: CPU count)")
    a.add_argument("--fail-on", choices=FAIL_LEVELS, help="exit 1 when any target has blocked / manual+ / review+ items")
    a.add_argument("--force", action="store_true", help="write into an existing report folder")
    a.add_argument("--json", action="store_true", help="print analysis.json to stdout")
    a.set_defaults(func=cmd_analyze)

    k = sub.add_parser("check", help="exit 1 when files still need converting for a target (CI, pre-commit; "
                                     "read-only)",
                       description="Report what `convert --to TARGET` would change or cannot move in the given files "
                                   "and folders, and exit 1 if there is any (advice is shown as notes and does not "
                                   "fail; files that cannot be parsed do). Writes nothing but -o and --write-baseline. "
                                   "See docs/check.md.")
    k.add_argument("inputs", nargs="+", metavar="INPUT", help="files and folders (Python and shell scripts are checked)")
    k.add_argument("-t", "--to", required=True, metavar="TARGET",
                   help="npu, mlu, musa, xpu, mps, cpu, accelerator, or a target .toml file")
    k.add_argument("--format", choices=("text", "json", "sarif"), default="text", help="report format (default: text)")
    k.add_argument("-o", "--output", metavar="FILE", help="write the report to FILE (the summary line still goes "
                                                          "to stdout)")
    k.add_argument("--baseline", metavar="FILE", help="suppress the findings recorded in FILE")
    k.add_argument("--write-baseline", metavar="FILE", help="record the current findings in FILE (exit 0 unless a "
                                                           "file cannot be parsed)")
    k.add_argument("-e", "--exclude", action="append", metavar="GLOB", help="skip matching files; repeatable")
    k.add_argument("--root", metavar="DIR", help="report paths relative to DIR (default: the current folder when "
                                                 "it holds every INPUT)")
    k.add_argument("-j", "--jobs", type=_jobs, metavar="N", help="worker processes (default: CPU count)")
    k.set_defaults(func=cmd_check)

    p = sub.add_parser("port-ext", help="port CUDA C++ extension sources and their build glue",
                       description="Port CUDA C/C++ extension sources (.cu .cuh .cpp .h ...), CMake and setup.py "
                                   "to MUSA or HIP; for npu/mlu write an inventory of the kernels to rewrite.")
    p.add_argument("input", nargs="?", help="file or folder")
    p.add_argument("-i", "--input", dest="input_opt", metavar="INPUT", help="same as the positional INPUT")
    p.add_argument("-t", "--to", required=True, metavar="TARGET", help="musa, hip, npu or mlu")
    p.add_argument("-o", "--output", help="output folder (default: <name>_<target> next to INPUT)")
    p.add_argument("-m", "--map", action="append", metavar="MAP.json", help="extra mapping table; repeatable")
    p.add_argument("--ignore", action="append", metavar="GLOB",
                   help="copy matching files unchanged (default: other vendors' mlu/ npu/ mps/ parrots/ subtrees)")
    p.add_argument("-j", "--jobs", type=_jobs, metavar="N")
    p.add_argument("--report-dir", metavar="DIR")
    pm = p.add_mutually_exclusive_group()
    pm.add_argument("--in-place", action="store_true", help="rewrite INPUT itself, keeping a backup")
    pm.add_argument("--diff", action="store_true", help="print a unified diff, write nothing")
    p.add_argument("--force", action="store_true")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_port_ext)

    r = sub.add_parser("run", help="run a CUDA script unmodified on the target (zero-edit migration)",
                       usage="torchport run --to TARGET [--report FILE] [--policy P] [--on-missing M] "
                             "(script.py | -m MODULE | PROGRAM) [ARGS...]",
                       description="Patch torch.cuda, device arguments, nccl, AMP and the profiler for TARGET, then "
                                   "run a script or module as __main__ (argv intact), or a program such as torchrun "
                                   "whose Python children patch themselves. See docs/run.md.")
    r.add_argument("-t", "--to", metavar="TARGET", help="target (default: TORCHPORT_TARGET, else the installed "
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
    r.add_argument("-m", dest="module", metavar="MODULE", help="run a module as __main__ (like python -m)")
    r.add_argument("--simulate", action="store_true", help="run on torchport's simulated TARGET device "
                                                           "(npu, mlu, musa; see `torchport sim`)")
    r.add_argument("--devices", type=int, default=1, metavar="N", help="simulated devices (with --simulate)")
    r.add_argument("--cpu-fallback", action="store_true", help="with --simulate: ops the target lacks run on the "
                                                               "CPU and are counted instead of raising")
    r.set_defaults(func=cmd_run, argv=[])

    sm = sub.add_parser("sim", help="run converted code on a simulated npu/mlu/musa device (CPU-backed)",
                        usage="torchport sim --to TARGET [--devices N] [--cpu-fallback] [--rng host|device] "
                              "[--report FILE] -- COMMAND [ARGS...]\n       torchport sim --build [--verbose]",
                        description="Run COMMAND (python train.py, torchrun ..., a shell script) with a simulated "
                                    "TARGET device: `import torch_npu` (torch_mlu, torch_musa) finds torchport's "
                                    "stand-in, which registers the device, torch.<target> and its collective "
                                    "backend. Numerics are the CPU's; performance is not the device's. "
                                    "See docs/sim.md.")
    sm.add_argument("-t", "--to", metavar="TARGET", help="npu, mlu or musa")
    sm.add_argument("--devices", type=int, default=1, metavar="N", help="number of simulated devices (default 1)")
    sm.add_argument("--cpu-fallback", action="store_true", help="ops the target lacks run on the CPU and are "
                                                                "counted (default: they raise the vendor's error)")
    sm.add_argument("--rng", choices=("host", "device"), default="host",
                    help="host (default): device random numbers come from the host generator, so a run matches "
                         "its cpu conversion; device: one generator per device, as on hardware")
    sm.add_argument("-v", "--torch-version", metavar="X", help="use the target's operator list for this torch "
                                                                "version (default: the installed torch)")
    sm.add_argument("--report", metavar="FILE", help="write the merged report (JSON, or Markdown for .md)")
    sm.add_argument("--build", action="store_true", help="build (or find) the simulator's extension and exit")
    sm.add_argument("--verbose", action="store_true", help="with --build: show the compiler output")
    sm.set_defaults(func=cmd_sim, sim_command=[])

    o = sub.add_parser("ops", help="operator support")
    osub = o.add_subparsers(dest="ops_command", metavar="OPS_COMMAND")
    oc = osub.add_parser("check", help="which recorded aten ops a target lacks or runs on the CPU")
    oc.add_argument("ops", help='ops JSON: ["aten::add.Tensor", ...], {"op": count}, or {"ops": [{"op", "count", "modules"}]}')
    oc.add_argument("-t", "--to", required=True, metavar="TARGET")
    oc.add_argument("-v", "--torch-version", metavar="X", help="pick the operator data for this torch version "
                                                                "(default: the one the ops file was recorded with)")
    oc.add_argument("--all", action="store_true", help="list supported ops too")
    oc.add_argument("--fail-on", choices=("missing", "fallback"), help="exit 1 when an op is missing (or falls back, "
                                                                       "or has a kernel only on the CPU)")
    oc.add_argument("--json", action="store_true")
    oc.set_defaults(func=cmd_ops_check)
    orc = osub.add_parser("record", help="record the aten ops a script runs (for ops check)",
                          usage="torchport ops record -o OPS.json [--steps N] [--to TARGET] -- python script.py [ARGS...]",
                          description="Run a script (in this process, as __main__) under an operator recorder: every aten "
                                      "op with its overload, input shapes, module paths, forward/backward and counts.")
    orc.add_argument("-o", "--output", required=True, metavar="OPS.json")
    orc.add_argument("--steps", type=int, metavar="N", help="stop after N optimizer steps")
    orc.add_argument("-t", "--to", metavar="TARGET", help="apply `torchport run --to TARGET` first (record a CUDA "
                                                          "script on a machine without CUDA)")
    orc.set_defaults(func=cmd_ops_record, script_command=[])

    pr = sub.add_parser("profile", help="profile a script's steps (trace, op table, summary); "
                                        "`profile diff A B` compares two profiles",
                        usage="torchport profile [--to T] [--steps N] [--wait W] [--warmup U] [--step-fn F] "
                              "[--window S] -o DIR -- python script.py [ARGS...]\n"
                              "       torchport profile diff A B [-o DIR]",
                        description="Profile a script in this process. A step ends at each optimizer.step(); "
                                    "an inference loop is stepped by calls of --step-fn, or else by wall-clock "
                                    "windows (when the script makes no optimizer in the first window). See "
                                    "docs/profile.md.")
    pr.add_argument("-o", "--output", metavar="DIR", help="profile folder (diff: report folder)")
    pr.add_argument("-t", "--to", metavar="TARGET", help="the target: its device activity is profiled and "
                                                         "`torchport run --to TARGET` patches are applied")
    pr.add_argument("--steps", type=int, default=3, help="active (recorded) steps; default 3")
    pr.add_argument("--wait", type=int, default=1, help="steps skipped first; default 1")
    pr.add_argument("--warmup", type=int, default=1, help="steps traced but discarded; default 1")
    pr.add_argument("--step-fn", metavar="F", help="a step is one call of F: FUNCTION (in the script), "
                                                   "MODULE:FUNCTION or MODULE:Class.method (inference loops)")
    pr.add_argument("--window", type=float, metavar="S", help="seconds of one wall-clock step, used when the "
                                                              "script makes no optimizer in the first window; "
                                                              "default 1")
    pr.set_defaults(func=cmd_profile, script_command=[])
    pd = sub.add_parser("profile-diff", help="compare two profiles (also spelled `profile diff A B`)",
                        prog="torchport profile diff",
                        description="Compare two profiles per op and per step (diff.md, diff.csv, diff.png).")
    pd.add_argument("a", metavar="A", help="profile folder of the reference run")
    pd.add_argument("b", metavar="B", help="profile folder of the run under test")
    pd.add_argument("-o", "--output", metavar="DIR", help="write diff.md, diff.csv and diff.png there")
    pd.set_defaults(func=cmd_profile_diff)

    dr = sub.add_parser("doctor", help="check this machine's setup for a target (one row per check, with fixes)")
    dr.add_argument("-t", "--to", metavar="TARGET", help="default: TORCHPORT_TARGET, else the installed vendor stack")
    dr.add_argument("--json", action="store_true")
    dr.set_defaults(func=cmd_doctor)

    ex = sub.add_parser("explain", help="known error messages -> cause and fix (text or --file LOG)")
    ex.add_argument("text", nargs="*", help="the error text")
    ex.add_argument("-f", "--file", metavar="LOG", help="a log file to search")
    ex.add_argument("-t", "--to", metavar="TARGET", help="only this target's errors (and generic ones)")
    ex.add_argument("--json", action="store_true")
    ex.set_defaults(func=cmd_explain)

    cmp = sub.add_parser("compare", help="compare two runs dumped with torchport.debug.dump (GPU vs target)")
    cmp.add_argument("a", metavar="A", help="dump folder of the reference run")
    cmp.add_argument("b", metavar="B", help="dump folder of the run under test")
    cmp.add_argument("-o", "--output", metavar="DIR", help="write compare.csv and compare.md there")
    cmp.add_argument("--rank", type=int, default=0)
    cmp.add_argument("--rtol", type=float, metavar="X", help="the relative error allowed everywhere (default: by "
                                                             "dtype, docs/debug.md)")
    cmp.set_defaults(func=cmd_compare)

    dbg = sub.add_parser("debug", help="dump a run (for compare) or find its first NaN/Inf, without editing the script")
    dsub = dbg.add_subparsers(dest="debug_command", metavar="DEBUG_COMMAND", required=True)
    for name, text in (("dump", "dump op outputs, parameters and gradients per step (for `torchport compare`)"),
                       ("nan", "name the first op making NaN/Inf from finite inputs: op, module, phase, step")):
        d = dsub.add_parser(name, help=text, description=text + "; the script runs in this process. See docs/debug.md.",
                            usage=f"torchport debug {name} " + ("-o DIR [--tensors] " if name == "dump" else
                                                                "[--check-every N] ")
                                  + "[--steps A-B] [--to TARGET] -- python script.py [ARGS...]")
        if name == "dump":
            d.add_argument("-o", "--output", required=True, metavar="DIR", help="dump folder")
            d.add_argument("--tensors", action="store_true", help="also save the tensors (else statistics only)")
        else:
            d.add_argument("--check-every", type=int, default=256, metavar="N", help="ops between host checks")
        d.add_argument("--steps", metavar="A-B", help="only steps A to B (from 0; A- or A also), then end the script")
        d.add_argument("-t", "--to", metavar="TARGET", help="apply `torchport run --to TARGET` first")
        d.set_defaults(func=cmd_debug, script_command=[])

    r = sub.add_parser("rules", help="list the conversion rules")
    r.add_argument("--markdown", action="store_true", help="print the full reference (docs/rules.md)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_rules)

    t = sub.add_parser("targets", help="list the bundled targets")
    t.add_argument("--json", action="store_true")
    t.set_defaults(func=cmd_targets)
    return ap


def main(argv=None) -> int:
    """Run one command; its exit code (see the module docstring)."""
    argv = sys.argv[1:] if argv is None else list(argv)
    command = "torchport"
    escape_undecodable_output()
    try:
        args = parse(argv)
        command = command_name(args)
        code = args.func(args)
        sys.stdout.flush()  # a reader that went away (`| head`) is noticed here, not at interpreter exit
        return code
    except SystemExit:  # --help, --version
        flush_stdout()
        raise
    except UsageError as e:
        return fail(2, f"torchport: error: {printable(str(e))}")
    except KeyboardInterrupt:
        return fail(130, "torchport: interrupted")
    except BrokenPipeError:
        silence_stdout()
        return 1
    except OSError as e:  # the machine's doing (full disk, read-only folder, no permission), not a bug
        show_traceback()
        return fail(2, f"torchport: error: {describe_os_error(e)}")
    except Exception as e:  # noqa: BLE001 - a bug: one line for users, the traceback on request
        show_traceback()
        return fail(3, f"torchport: internal error in `{command}`: {type(e).__name__}: {printable(str(e))} "
                       "(run it again with TORCHPORT_DEBUG=1 for the traceback, and please report it)")


def parse(argv: list) -> argparse.Namespace:
    """The parsed command line; UsageError when it names no command."""
    parser = build_parser()
    rest = None
    if argv[:1] == ["run"]:
        argv, rest = split_run_argv(argv)
    elif argv[:2] == ["ops", "record"] or (argv[:1] == ["profile"] and argv[1:2] != ["diff"]):
        argv, rest = split_script_argv(argv)
    elif argv[:1] in (["sim"], ["debug"]) and "--" in argv:
        at = argv.index("--")
        argv, rest = argv[:at], argv[at + 1:]
    elif argv[:2] == ["profile", "diff"]:
        argv = ["profile-diff", *argv[2:]]
    args = parser.parse_args(argv)
    if rest is not None:
        if argv[:1] == ["run"]:
            args.argv = rest
        elif argv[:1] == ["sim"]:
            args.sim_command = rest
        else:
            args.script_command = rest
    if not getattr(args, "func", None):
        if args.command == "ops":
            raise UsageError("ops needs a subcommand: check or record (see `torchport ops --help`)")
        raise UsageError("a COMMAND is needed (see `torchport --help`)")
    return args


def command_name(args) -> str:
    """`convert`, `ops check`, `profile diff`...: how the user spelled the command."""
    if args.command == "profile-diff":
        return "profile diff"
    sub = getattr(args, "ops_command", None) or getattr(args, "debug_command", None)
    return " ".join(filter(None, (args.command, sub)))


def fail(code: int, line: str) -> int:
    try:
        print(line, file=sys.stderr)
    except OSError:  # stderr is gone too: the exit code still tells
        pass
    return code


def show_traceback() -> None:
    if os.environ.get("TORCHPORT_DEBUG"):
        traceback.print_exc()


def describe_os_error(e: OSError) -> str:
    """`PATH: reason` (both paths for a rename), or the reason alone when the error names no path."""
    reason = e.strerror or str(e)
    if e.filename is None:
        return reason
    where = printable(e.filename)
    if e.filename2 is not None:
        where += f" -> {printable(e.filename2)}"
    return f"{where}: {reason}"


def escape_undecodable_output() -> None:
    """A file name that is not UTF-8 holds surrogates (`\\udcff`); in JSON output they are written as that
    escape (valid JSON, the exact name) instead of failing (a strict locale) or writing the raw byte (C.UTF-8)."""
    if sys.stdout is sys.__stdout__ and hasattr(sys.stdout, "reconfigure"):
        sys.stdout.reconfigure(errors="backslashreplace")


def flush_stdout() -> None:
    try:
        sys.stdout.flush()
    except BrokenPipeError:
        silence_stdout()


def silence_stdout() -> None:
    """After a broken pipe: point the process's stdout at /dev/null, so Python's last flush at exit
    does not fail again and print "Exception ignored" (only for the real stdout, not a test's capture)."""
    if sys.stdout is not sys.__stdout__:
        return
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError):
        pass


if __name__ == "__main__":
    sys.exit(main())
