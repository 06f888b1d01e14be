"""The Python API: each function runs a command and writes its reports, as the command line does, and returns the
same result the command line prints.  (The commands themselves, in commands.convert, commands.analyze, commands.port and
check.api, write no report: the writers are a layer above them.)"""
from __future__ import annotations

from pathlib import Path


def convert(path, target, output=None, **options):
    """Convert a file or directory for `target` and write the reports; see torchport.commands.convert.convert.
    A single file without `output` (or in_place/diff/dry_run) is converted as a dry run, as the command line does:
    nothing is written beside it, and the converted text is the result's `files[0].new_text`."""
    from .commands.convert import ConvertRequest
    from .commands.convert import convert as command
    from .core import manifest
    from .report import write_all

    if output is None and Path(path).is_file() and not any(options.get(k) for k in ("in_place", "diff", "dry_run")):
        options["dry_run"] = True
    since = manifest.start()
    result = command(ConvertRequest.of(path, target, output, **options))
    result.settled = None  # a folder output: what this run replaced there (core/manifest.py)
    if result.report_dir and result.mode == "write" and result.output and Path(result.input).is_dir():
        result.settled = manifest.settle(result.output, result.report_dir, [r.path for r in result.files], since)
    if result.report_dir:
        write_all(result, Path(result.report_dir))
    return result


def analyze(path, targets=None, **options):
    """Assess a project for targets and write the reports; see torchport.commands.analyze.analyze."""
    from .commands.analyze import AnalyzeRequest
    from .commands.analyze import analyze as command
    from .report.analysis import write_analysis

    result = command(AnalyzeRequest.of(path, targets, **options))
    if result.output:
        write_analysis(result, Path(result.output))
    return result


def port_ext(path, target, output=None, **options):
    """Port CUDA C++ extension sources for `target` and write the reports; see torchport.commands.port.port."""
    from .commands.port import PortRequest
    from .commands.port import port as command
    from .core import manifest
    from .report.port import write_port

    since = manifest.start()
    result = command(PortRequest.of(path, target, output, **options))
    result.settled = None  # a folder output: what this run replaced there (core/manifest.py)
    if result.report_dir and result.mode == "write" and result.output and Path(result.input).is_dir():
        result.settled = manifest.settle(result.output, result.report_dir, [r.output or r.path for r in result.files],
                                         since)
    if result.report_dir:
        write_port(result, Path(result.report_dir))
    return result


def check(inputs, target, **options):
    """What convert would still change in these files (writes nothing); see torchport.commands.check.check."""
    from .commands.check import CheckRequest
    from .commands.check import check as command

    return command(CheckRequest.of(inputs, target, **options))


def migrate(path, target, output=None, **options):
    """analyze -> convert -> port-ext -> check (-> verify) into one output tree, and its one report folder
    `<output>/torchport-report/`; see torchport.commands.migrate.migrate."""
    import shutil

    from .commands.migrate import MigrateRequest
    from .commands.migrate import migrate as command
    from .report.migrate import write_migrate

    result = command(MigrateRequest.of(path, target, output, **options))
    try:
        write_migrate(result, Path(result.report_dir))
    finally:
        if result.port is not None and result.port.backup:  # the copies port-ext replaced: torchport's own
            shutil.rmtree(result.port.backup, ignore_errors=True)
    return result
