"""`torchport run`: run a script, a module (-m) or a program with the run-time migration applied.

A script or module runs in this process as `__main__` (argv intact) after `patch()`; a program
found on PATH (`torchrun`, `accelerate`...) runs as a child.  Either way the environment makes
every Python child patch itself (environment.for_children), and with `--report FILE` each
process writes its counts at exit into a temporary folder that is merged into FILE (.json, or
Markdown when FILE ends with .md).

`run_steps` is the same in-process run with a callback at every optimizer.step() that can end the
script: `torchport ops record` and `torchport profile` use it.
"""
from __future__ import annotations

import contextlib
import json
import os
import runpy
import shutil
import subprocess
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Optional, cast

from ..core import files, writes
from ..core.command import child_command, interpreter, interpreter_words, is_this_interpreter
from ..core.errors import UsageError
from . import environment
from .stats import markdown, merge

_RUNTIME = Path(__file__).resolve().parent   # torchport's runtime: no frame of it ends a refusal's traceback


def run(target: str, argv: list, *, module: Optional[str] = None, report: Optional[str] = None,
        policy: Optional[str] = None, on_missing: Optional[str] = None, simulate: Optional[dict] = None,
        amp_dtype: Optional[str] = None) -> int:
    """Run `argv` (script and its arguments, or the module's arguments) for `target`; the exit code.
    `simulate` ({"devices": N, "cpu_fallback": bool}) runs it on torchport's simulated device."""
    words = interpreter_words(argv) if module is None else 0
    rest = argv[words:]
    if words and is_this_interpreter(cast(str, interpreter(argv))) and (  # words: argv names Python
            rest[:1] == ["-m"] or (rest and Path(rest[0]).is_file())):
        # `python3 train.py`, `/usr/bin/env python -m pkg`: run it here (`python -c ...` and another
        # Python, say /usr/bin/python3 without torch, stay a program)
        argv = rest
        if argv[:1] == ["-m"]:
            if len(argv) < 2:
                raise UsageError("-m needs a module name")
            module, argv = argv[1], argv[2:]
    if module is None and not argv:
        raise UsageError("run needs a script (or -m MODULE, or a program such as torchrun)")
    script = argv[0] if module is None else None
    program = None
    if script is not None and (interpreter(argv) or not Path(script).is_file()):
        argv = child_command(argv)  # a bare `python` is this interpreter, as in `torchport sim`
        program = shutil.which(argv[0])
        if program is None:
            raise UsageError(f"script not found: {script}")
    files.check_report_path(report, [*(argv or []), *([script] if script else [])])
    sim_dir = _simulate(target, simulate) if simulate is not None else None
    report_dir = tempfile.mkdtemp(prefix="torchport-run-") if report else None
    from . import patch

    try:
        try:
            session = patch(target, policy=policy, on_missing=on_missing, amp_dtype=amp_dtype)
        except SystemExit as e:   # the simulated device could not start here: its summary says why
            if sim_dir:
                _simulated(sim_dir, target, e.code if isinstance(e.code, int) else 2)
            raise
        if report_dir:
            os.environ[environment.REPORT_DIR] = report_dir  # children write their counts here at exit
        if program is not None:
            code = subprocess.call([program, *argv[1:]])
        else:
            code = run_here(script, module, argv)
        simulated = _simulated(sim_dir, target, code) if sim_dir else None
        if report_dir:
            session.stats.write(report_dir)
            _write_report(report_dir, Path(cast(str, report)), simulated)   # report_dir: only with a report
        return code
    finally:
        os.environ.pop(environment.REPORT_DIR, None)
        for folder in (report_dir, sim_dir):
            if folder:
                shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def simulated(target: Optional[str], enabled: bool):
    """Run the body on torchport's simulated `target` device when `enabled` (debug and profile's --simulate): the
    stand-in vendor package is found by `patch()`, and the device's summary, with the exit code the body puts in
    the dict it is given, is printed at the end."""
    outcome = {"code": 1}   # the body sets the script's exit code here
    if not enabled:
        yield outcome
        return
    folder = _simulate(target, {})
    try:
        yield outcome
    finally:
        try:
            _simulated(folder, target, outcome["code"])
        finally:
            shutil.rmtree(folder, ignore_errors=True)


def run_patched(script: Optional[str], module: Optional[str], args: list, *, target: Optional[str],
                amp_dtype: Optional[str], simulate: bool, passthrough: tuple, instruments) -> int:
    """Run a script (or module) here with `torchport run --to TARGET`'s patches (and on the simulated device with
    `simulate`), inside the context managers `instruments()` returns, made once the patches are in place (a
    profiler must see the vendor's activity); the exit code, 0 when one of `passthrough` ends the script early.
    debug and profile run scripts so."""
    if (amp_dtype or simulate) and not target:
        raise UsageError("--amp-dtype and --simulate go with --to TARGET")
    with simulated(target, simulate) as outcome:
        if target:
            from . import patch

            patch(target, amp_dtype=amp_dtype)
        with contextlib.ExitStack() as stack:
            for instrument in instruments():
                stack.enter_context(instrument)
            try:
                code = run_here(script, module, args, passthrough=passthrough)
            except passthrough:
                code = 0
        outcome["code"] = code
    return code


def _simulate(target: Optional[str], options: dict) -> str:
    """Put the simulated device's stand-in vendor package where `patch()` imports it, here and in
    children; the folder where the simulating processes write their reports."""
    from ..sim import package_path
    from ..sim.launch import environment as sim_environment

    if not target:
        raise UsageError("--simulate needs --to TARGET (npu, mlu or musa)")
    env = sim_environment(target, devices=options.get("devices", 1), cpu_fallback=options.get("cpu_fallback", False),
                          strict_ops=options.get("strict_ops", False))
    folder = tempfile.mkdtemp(prefix="torchport-sim-")
    os.environ.update({**env, "TORCHPORT_SIM_REPORT": folder})
    sys.path[1:1] = package_path(target)  # run_here replaces sys.path[0]; spawn children copy sys.path
    return folder


def _simulated(folder: str, target: Optional[str], code: int) -> dict:
    """What the simulated device reported (this process and its children), summed up on stderr."""
    from .. import sim
    from ..sim import launch as sim_launch

    active = sim.active()
    if active is not None:
        sim.write_report(active, Path(folder))
    merged = sim_launch.merge(folder)
    merged["exit_code"], merged["requested"] = code, target
    print(sim_launch.summary(merged), file=sys.stderr)
    return merged


def run_here(script: Optional[str], module: Optional[str], argv: list, passthrough: tuple = ()) -> int:
    """Run a script or module as __main__ here; its exit code (exceptions of `passthrough` types
    propagate: a caller's way of ending the script early)."""
    saved_argv, saved_path0 = sys.argv[:], sys.path[0] if sys.path else None
    try:
        if module is not None:
            sys.argv = [module, *argv]
            sys.path[0] = os.getcwd()
            runpy.run_module(module, run_name="__main__", alter_sys=True)
        else:
            script = cast(str, script)   # no module: a script
            sys.argv = list(argv)
            sys.path[0] = str(Path(script).resolve().parent)
            runpy.run_path(script, run_name="__main__")
        return 0
    except SystemExit as e:
        if e.code is None:
            return 0
        if isinstance(e.code, int):
            return e.code
        sys.stderr.write(f"{e.code}\n")
        return 1
    except KeyboardInterrupt:
        return 130
    except BaseException as e:  # the script's own error: its traceback, as python would print it
        if isinstance(e, passthrough):
            raise
        tb = e.__traceback__
        while tb is not None and (tb.tb_frame.f_code.co_filename in (__file__, runpy.__file__)
                                  or tb.tb_frame.f_code.co_filename.startswith("<frozen runpy")):
            tb = tb.tb_next  # start at the script, not at torchport's and runpy's frames
        from .session import TorchportUnsupported

        if isinstance(e, TorchportUnsupported):   # torchport's own refusal: end at the user's line, not in torchport
            frames = traceback.extract_tb(tb)
            while len(frames) > 1 and Path(frames[-1].filename).resolve().is_relative_to(_RUNTIME):
                frames.pop()
            sys.stderr.write("Traceback (most recent call last):\n" + "".join(traceback.format_list(frames))
                             + "".join(traceback.format_exception_only(type(e), e)))
            return 1
        traceback.print_exception(type(e), e, tb)
        return 1
    finally:
        sys.argv = saved_argv
        if saved_path0 is not None:
            sys.path[0] = saved_path0


def _write_report(folder: str, path: Path, simulated: Optional[dict] = None) -> None:
    reports = []
    for f in sorted(Path(folder).glob("*.json")):
        try:
            reports.append(json.loads(f.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            continue
    merged = merge(reports)
    if simulated is not None:
        merged["simulated"] = simulated
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".md":
        from ..sim.launch import summary

        note = f"\n{summary(simulated)} ({simulated['note']})\n" if simulated else ""
        writes.write_text(path, markdown(merged) + note)   # atomic, never through a link
    else:
        writes.write_text(path, json.dumps(merged, indent=1) + "\n")


class _StepsDone(BaseException):
    """Raised from the optimizer hook to end a script early (not an error)."""


def split_command(argv: list) -> tuple:
    """(script, module, args) from `python train.py a b`, `train.py a b` or `python -m pkg a b`; any
    interpreter spelling works (`/usr/bin/python3 -u`, `python3.11`, `/usr/bin/env python`)."""
    argv = argv[interpreter_words(argv):]
    if not argv:
        raise UsageError("a command is needed: -- python train.py ARGS")
    if argv[0] == "-m":
        if len(argv) < 2:
            raise UsageError("-m needs a module name")
        return None, argv[1], argv[2:]
    if not Path(argv[0]).is_file():
        raise UsageError(f"script not found: {argv[0]}")
    return argv[0], None, argv


def run_steps(command: list, context, on_step, target: Optional[str] = None) -> int:
    """Run `command` (split_command's forms) here inside `context`, calling `on_step()` after every
    optimizer.step(); when it returns True the script is ended (exit code 0).  With `target`, the
    run-time patches of `torchport run --to target` are applied first."""
    script, module, args = split_command(command)
    if target:
        from . import patch

        patch(target)
    from torch.optim.optimizer import register_optimizer_step_post_hook

    def after_step(optimizer, *a, **k):
        if on_step():
            raise _StepsDone()

    handle = register_optimizer_step_post_hook(after_step)
    try:
        with context:
            try:
                return run_here(script, module, args, passthrough=(_StepsDone,))
            except _StepsDone:
                return 0
    finally:
        handle.remove()
