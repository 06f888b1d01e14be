"""What a test needs, as pytest marks, and the check that keeps those marks true (a pytest plugin).

The marks (registered in pyproject.toml, where --strict-markers makes a misspelt one an error):
  subprocess   starts a process: torchport's CLI, python, a process pool, a compiler, a browser
  torch        imports torch, in the test's own process or in a program it starts
  sim          runs the simulated npu/mlu/musa device (its C++ extension, built once per machine and cached)
  distributed  starts two or more processes that form a process group (torchrun, mp.spawn)
  browser      drives headless Chromium through playwright (report.html)
  soak         a long randomized run, left out of the default run (`pytest -m soak` runs it)

sim, distributed and browser tests start processes, so they are given `subprocess` too.  The inner loop,
`pytest -m "not subprocess and not torch"`, runs the tests that start nothing and never import torch.

The check: a test that starts a process without the `subprocess` mark, or that imports torch into its
own process without the `torch` mark, fails and says which mark to add.  Processes are seen through
Python's audit events (subprocess.Popen, os.fork, os.system, os.exec*, os.posix_spawn) and
multiprocessing's spawn; torch by its arrival in sys.modules during the test, so that part holds where
torch was not imported before the test, which is every test of the inner loop.  Not checked: torch in
a child process, and sim, distributed and browser, which name what the test is about.  A test module
all of whose tests need a mark says so once, with a module-level `pytestmark`; a run whose -m
expression leaves that mark out does not even import the module (so the inner loop never loads torch).
"""
from __future__ import annotations

import ast
import json
import keyword
import multiprocessing.util
import os
import re
import sys
from pathlib import Path

import pytest

NEEDS = ("subprocess", "torch", "sim", "distributed", "browser", "soak")
IMPLIES_SUBPROCESS = ("sim", "distributed", "browser")
PROCESS_EVENTS = {"subprocess.Popen", "os.system", "os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn"}
# Programs a library runs once per machine to build a cache, in whichever test first imports it: matplotlib's font
# manager runs fc-list when it has no font cache yet (a fresh CI machine), not because of what the test does.
CACHE_BUILDERS = {"fc-list"}
RECORD = os.environ.get("TORCHPORT_TEST_NEEDS_RECORD", "")
# the running test's id, what it did (need -> first example), and whether torch was loaded when it began
_seen: dict = {"test": None, "found": {}, "torch_before": True}


def _note(need: str, what: str) -> None:
    if _seen["test"] is not None:
        _seen["found"].setdefault(need, what)


def _audit(event: str, args: tuple) -> None:
    if _seen["test"] is None:
        return
    if event in PROCESS_EVENTS:
        argv = _argv(args)
        if argv and os.path.basename(argv[0]) in CACHE_BUILDERS:
            return
        _note("subprocess", f"{event} {' '.join(map(str, argv))[:120]}")


def _argv(args: tuple) -> list:
    """The command line of a process-starting audit event, as far as it tells."""
    if len(args) > 1 and isinstance(args[1], (list, tuple)):
        return [str(a) for a in args[1]]
    return [str(a) for a in args[:1]]


def _spawn_watcher(spawn):
    def spawnv_passfds(path, args, passfds):
        _note("subprocess", f"multiprocessing spawn {path}")
        return spawn(path, args, passfds)
    return spawnv_passfds


sys.addaudithook(_audit)
multiprocessing.util.spawnv_passfds = _spawn_watcher(multiprocessing.util.spawnv_passfds)


def marks_of(item) -> set:
    return {m.name for m in item.iter_markers() if m.name in NEEDS}


def pytest_collection_modifyitems(config, items):
    for item in items:
        if marks_of(item) & set(IMPLIES_SUBPROCESS) and "subprocess" not in marks_of(item):
            item.add_marker("subprocess")
    if "soak" not in (config.getoption("markexpr", "") or ""):   # soak runs only when asked for by name
        soaks = [item for item in items if "soak" in marks_of(item)]
        if soaks:
            config.hook.pytest_deselected(items=soaks)
            items[:] = [item for item in items if "soak" not in marks_of(item)]


def module_marks(path: Path) -> set:
    """The marks of a test module's module-level `pytestmark` (pytest.mark.X, or a list of them), read
    without importing it."""
    try:
        tree = ast.parse(path.read_text(encoding="utf-8"))
    except (OSError, SyntaxError, ValueError):
        return set()
    for node in tree.body:
        if isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets):
            values = node.value.elts if isinstance(node.value, (ast.List, ast.Tuple)) else [node.value]
            return {v.attr for v in values if isinstance(v, ast.Attribute) and v.attr in NEEDS}
    return set()


def leaves_out(expression: str, marks: set) -> bool:
    """Does the -m expression deselect every test that has `marks` (and no others of NEEDS)?  Only plain
    expressions (names, and, or, not, parentheses) are read; anything else deselects nothing here."""
    words = re.findall(r"\w+|[()]|\S+", expression)
    if not words or any(not (w in ("(", ")", "and", "or", "not") or w.isidentifier() and not keyword.iskeyword(w))
                        for w in words):
        return False
    has = marks | ({"subprocess"} if marks & set(IMPLIES_SUBPROCESS) else set())
    code = " ".join(w if w in ("(", ")", "and", "or", "not") else str(w in has) for w in words)
    try:
        return not eval(code, {"__builtins__": {}})   # only True, False, and, or, not, parentheses
    except SyntaxError:
        return False


def pytest_ignore_collect(collection_path, config):
    expression = config.getoption("markexpr", "") or ""
    if expression and collection_path.suffix == ".py" and collection_path.name.startswith("test_"):
        marks = module_marks(collection_path)
        if marks and leaves_out(expression, marks):
            return True
    return None


def pytest_runtest_setup(item):
    _seen["test"], _seen["found"], _seen["torch_before"] = item.nodeid, {}, "torch" in sys.modules


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    if call.when != "call":
        return
    if not _seen["torch_before"] and "torch" in sys.modules:
        _note("torch", "import torch")
    report, found = outcome.get_result(), dict(_seen["found"])
    _seen["test"] = None
    missing = {need: what for need, what in found.items() if need not in marks_of(item)}
    if RECORD:   # TORCHPORT_TEST_NEEDS_RECORD=FILE: write what each test did instead of checking it
        with open(RECORD, "a", encoding="utf-8") as f:
            f.write(json.dumps({"test": item.nodeid, "found": found}) + "\n")
        return
    if missing and report.passed:
        report.outcome = "failed"
        report.longrepr = "\n".join(f"{item.nodeid} needs @pytest.mark.{need} (tests/needs.py): it did `{what}`"
                                    for need, what in sorted(missing.items()))
