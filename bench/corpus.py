"""Convert real projects (PyPI sdists) to every target and check what must always hold.

For each project and target:
  1. every output .py file parses when its input parsed;
  2. converting the output again changes nothing, and finds the same unsupported uses convert left (so
     `check` on the output agrees with convert's report);
  3. no user identifier is renamed (names defined by def/class/arguments/assignments);
  4. no file other than .py/.sh changes;
  5. every torch.cuda use left in the output is listed in unsupported_api.csv (except names the target
     keeps on purpose: `same` in its file, its needs_device calls that run only with a device, and on cpu
     any call that does);
  6. `analyze` agrees with `convert`: its unsupported list for the target is exactly what convert left.
  7. every essential device line of the input (torch.cuda uses, `.cuda(...)`, "cuda"/"cuda:N"/"nccl"
     strings; found without torchport) is converted, named in the report, or, on the cpu target, a
     question it keeps on purpose; the row prints converted/reported/kept/silent, and silent must be 0.
mmcv (C++/CUDA ops) is analyzed too, and its sources are ported with `port-ext` to musa and hip,
checked by bench/port_checks.py (token streams, includes, renames, build files) and ported a second
time (which must change nothing).  Downloads (once, into .corpus-cache/) are the only network use.
Each analyze, convert and port is a task; --jobs of them run side by side (default: one per CPU), and the
rows are printed in the same order whatever the number.  Exit code 1 on any failure.
"""
from __future__ import annotations

import argparse
import ast
import csv
import difflib
import json
import re
import shutil
import sys
import tempfile
import time
from collections import Counter
from concurrent.futures import Future, ProcessPoolExecutor
from multiprocessing import get_context
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
from port_checks import check_tree, decode, files_of
from pypi_cache import sdist

import torchport
from torchport.api import analyze
from torchport.api import port_ext as port
from torchport.backends import available_targets, load_target
from torchport.commands.port import DEFAULT_IGNORES
from torchport.converter.guards import runs_only_with_device
from torchport.core.files import _excluded
from torchport.core.parallel import default_jobs
from torchport.porting.engine import load_map

PROJECTS = [("yolox", "0.3.0"), ("ultralytics", "8.4.190"), ("timm", "1.0.31"), ("transformers", "4.46.3"),
            ("mmcv", "2.2.0")]
PORT_PROJECTS = [("mmcv", "2.2.0")]
PORT_TARGETS = ("musa", "hip")


def defined_names(tree) -> list:
    out = []
    for n in ast.walk(tree):
        if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.append(n.name)
        elif isinstance(n, ast.arg):
            out.append(n.arg)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            out.append(n.id)
        elif isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store) \
                and isinstance(n.value, ast.Name) and n.value.id in ("self", "cls"):
            out.append(n.attr)
    return sorted(out)


def apex_rebinding(old_tree, new_tree) -> bool:
    """Do the defined names differ only as TP120's apex.amp conversion changes them: `as` names of
    `with amp.scale_loss(...)` and the targets of `... = amp.initialize(...)` bound fewer times, `amp_scaler`
    added?"""
    rebound = set()
    for n in ast.walk(old_tree):
        if isinstance(n, ast.With) and any(isinstance(i.context_expr, ast.Call) and
                                           getattr(i.context_expr.func, "attr", "") == "scale_loss" for i in n.items):
            rebound.update(t.id for i in n.items for t in ast.walk(i.optional_vars or ast.Pass())
                           if isinstance(t, ast.Name))
        if isinstance(n, ast.Assign) and isinstance(n.value, ast.Call) and \
                getattr(n.value.func, "attr", "") == "initialize":
            rebound.update(t.id for target in n.targets for t in ast.walk(target) if isinstance(t, ast.Name))
    if not rebound:
        return False
    old, new = Counter(defined_names(old_tree)), Counter(defined_names(new_tree))
    return all(old[k] >= new[k] for k in rebound) and \
        {k for k in old | new if old[k] != new[k]} <= rebound | {"amp_scaler"}


def torch_cuda_lines(tree, same=frozenset(), guarded=frozenset(), host=False) -> set:
    """Lines using torch.cuda (through any import spelling), found independently of torchport.
    Uses of the names in `same` (those the target keeps on purpose: the cpu target's
    torch.cuda.is_available, which CPU torch answers) are not counted, nor calls of the names in `guarded`
    (the target's needs_device) and, on the `host` target, calls of any torch.cuda name, that run only where a
    device is there (under `if torch.cuda.is_available():`, after `if device.type == "cpu": return`): CPU
    torch never runs them.  Which code runs only with a device is torchport's own reading
    (converter/guards.py, tested on its own in tests/test_guards.py), the one part not found independently."""
    torch_names, cuda_names = set(), {}   # cuda_names: local name -> the torch.cuda name it is
    parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}

    def kept(node, qualname) -> bool:
        parent = parents.get(id(node))
        name = f"{qualname}.{parent.attr}" if isinstance(parent, ast.Attribute) else qualname
        if qualname in same or name in same:
            return True
        callee = node   # the whole chain: torch.cuda.random.set_rng_state_all
        while isinstance(parents.get(id(callee)), ast.Attribute):
            callee = parents[id(callee)]
        called = isinstance(parents.get(id(callee)), ast.Call) and parents[id(callee)].func is callee
        return called and (name in guarded or host) and runs_only_with_device(parents, callee)
    for n in ast.walk(tree):
        if isinstance(n, ast.Import):
            for a in n.names:
                if a.asname and (a.name == "torch.cuda" or a.name.startswith("torch.cuda.")):
                    cuda_names[a.asname] = a.name
                elif a.asname and a.name == "torch":
                    torch_names.add(a.asname)
                elif not a.asname and a.name.split(".")[0] == "torch":
                    torch_names.add("torch")
        elif isinstance(n, ast.ImportFrom) and n.module and not n.level:
            for a in n.names:
                full = f"{n.module}.{a.name}"
                if full == "torch.cuda" or full.startswith("torch.cuda."):
                    cuda_names[a.asname or a.name] = full
    for name in set(defined_names(tree)):  # also defined in the file: a local import, not checkable by name alone
        cuda_names.pop(name, None)
    lines = set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Attribute) and n.attr == "cuda" and isinstance(n.value, ast.Name) \
                and n.value.id in torch_names and not kept(n, "torch.cuda"):
            lines.add(n.lineno)
        elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in cuda_names \
                and not kept(n, cuda_names[n.id]):
            lines.add(n.lineno)
    return lines


def line_map(old: str, new: str) -> dict:
    """Output line number -> input line number."""
    a, b = old.splitlines(), new.splitlines()
    out = {}
    for _tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for k in range(j2 - j1):
            out[j1 + k + 1] = min(i1 + k, max(i2 - 1, i1)) + 1
    return out


DEVICE_WORDS = re.compile(r"(?:cuda(?::\d+)?|[nN][cC][cC][lL])\Z")   # backends are case-insensitive, devices not
PATH_CALLS = {"join", "Path", "PurePath", "exists", "isdir", "isfile"}   # "cuda" as a folder name is no device


def device_lines(tree, same=frozenset(), host=False, guarded=frozenset(), device="", gloo=False) -> tuple:
    """(lines, questions, {line: import line}): the essential device code of a file, found independently of torchport: torch.cuda
    uses (except `same` names), `x.cuda(...)` calls, and exact device or backend strings ("cuda", "cuda:1",
    "nccl") other than docstrings.  On the host target (cpu), strings compared with something
    (`device.type == "cuda"`, `backend in ["gloo", "nccl"]`) are questions its target file keeps on purpose
    (CPU torch answers them "no"): they are returned apart.  Path components (`os.path.join("cuda", ...)`)
    are not devices.  A use of a name imported from torch.cuda follows its import: the third item maps
    such lines to the import's line.  On the host target, a torch.cuda call that runs only where a device is
    there never runs: kept on purpose too.  On any target, a collection a device is compared with that
    already lists the target's own type (`device.type in {"cuda", "npu"}` on npu) reads the same with its
    "cuda" left in: a question kept on purpose.  Where the target's collectives are gloo (`gloo`: cpu, mps), a
    backend name compared with something (`dist.get_backend() == "nccl"`) is such a question too: it answers no
    there, as convert keeps it (converter/rules/distributed.py, question_policy)."""
    lines, questions = set(torch_cuda_lines(tree, same)), set()
    if host:
        questions |= lines - torch_cuda_lines(tree, same, guarded, host=True)
    docstrings = {id(n.value) for n in ast.walk(tree) if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
    compared, listing_target = set(), set()
    for n in ast.walk(tree):
        if isinstance(n, ast.Compare):
            for operand in (n.left, *n.comparators):
                compared.update(id(m) for m in ast.walk(operand))
                if device and isinstance(operand, (ast.List, ast.Tuple, ast.Set)) and any(
                        isinstance(e, ast.Constant) and isinstance(e.value, str)
                        and e.value.split(":")[0] == device for e in operand.elts):
                    listing_target.update(id(e) for e in operand.elts)
        elif isinstance(n, ast.Call) and getattr(n.func, "attr", getattr(n.func, "id", "")) in PATH_CALLS:
            docstrings.update(id(a) for a in n.args)
    imports = {}   # a name imported from torch.cuda -> the line of its import
    for n in ast.walk(tree):
        if isinstance(n, ast.ImportFrom) and (n.module or "").split(".")[:2] == ["torch", "cuda"] and not n.level:
            imports.update({a.asname or a.name: n.lineno for a in n.names if f"{n.module}.{a.name}" not in same})
        elif isinstance(n, ast.Import):
            imports.update({a.asname: n.lineno for a in n.names if a.asname and a.name.split(".")[:2] == ["torch", "cuda"]})
    lines.update(imports.values())
    via_import = {n.lineno: imports[n.id] for n in ast.walk(tree)
                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id in imports}
    for n in ast.walk(tree):
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "cuda":
            lines.add(n.func.end_lineno)
        elif isinstance(n, ast.Constant) and isinstance(n.value, str) and DEVICE_WORDS.match(n.value) \
                and id(n) not in docstrings:
            asked = id(n) in compared and (host or gloo and n.value.lower() == "nccl")
            (questions if asked or id(n) in listing_target else lines).add(n.lineno)
    return lines - questions, questions, via_import


def changed_lines(old: str, new: str) -> set:
    """Lines of `old` that the conversion changed (or removed)."""
    a, b = old.splitlines(), new.splitlines()
    out = set()
    for tag, i1, i2, _j1, _j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if tag != "equal":
            out.update(range(i1 + 1, max(i2, i1 + 1) + 1))
    return out


def device_line_counts(src: Path, out: Path, reports: Path, target: str) -> tuple:
    """({converted, reported, kept, silent}, [silent file:line]) over the essential device lines of the
    input's Python files: changed by convert, named by a finding of its report, a question the host
    target keeps on purpose, or none of these (silent: must be 0)."""
    t = load_target(target)
    same = {q for q, d in t.names.items() if d.kind == "same"}
    found = {}
    for f in json.loads((reports / "report.json").read_text(encoding="utf-8"))["findings"]:
        for line in range(f["line"], f["end_line"] + 1):
            found.setdefault(f["file"], set()).add(line)
    counts, silent = {"converted": 0, "reported": 0, "kept": 0, "silent": 0}, []
    for path in sorted(p for p in src.rglob("*.py") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(src).as_posix()
        dst = out / rel
        if any(part in (".git", "__pycache__") for part in path.parts) or not dst.exists():
            continue
        old = decode(path.read_bytes())
        if "cuda" not in old.lower() and "nccl" not in old.lower():
            continue
        try:
            lines, questions, via_import = device_lines(ast.parse(old), same, t.host, set(t.needs_device), t.device,
                                                        gloo=not t.backend_expr and t.backend.lower() == "gloo")
        except (SyntaxError, ValueError):
            continue
        new = decode(dst.read_bytes())
        changed = changed_lines(old, new) if new != old else set()
        counts["kept"] += len(questions - lines)
        for line in sorted(lines):
            if line in changed or via_import.get(line) in changed:
                counts["converted"] += 1
            elif line in found.get(rel, ()):
                counts["reported"] += 1
            else:
                counts["silent"] += 1
                silent.append(f"{rel}:{line}: {old.splitlines()[line - 1].strip()[:90]}")
    return counts, silent


def check(src: Path, out: Path, reports: Path, target: str) -> list:
    problems = []
    same = {q for q, d in load_target(target).names.items() if d.kind == "same"}
    t = load_target(target)
    guarded = set(t.needs_device)
    unsupported = set()
    with open(reports / "unsupported_api.csv", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            for line in range(int(row["Start Line"]), int(row["End Line"]) + 1):
                unsupported.add((row["File"], line))
    for path in sorted(p for p in src.rglob("*") if p.is_file() and not p.is_symlink()):
        rel = path.relative_to(src).as_posix()
        if any(part in (".git", "__pycache__") for part in path.parts):
            continue
        dst = out / rel
        if not dst.exists():
            problems.append(f"{rel}: missing from the output")
            continue
        a, b = path.read_bytes(), dst.read_bytes()
        if not rel.endswith((".py", ".sh", ".bash", ".pyw", ".pyi")):
            if a != b:
                problems.append(f"{rel}: a non-Python, non-shell file changed")
            continue
        if not rel.endswith(".py"):
            continue
        old, new = decode(a), decode(b)
        if a == b and "cuda" not in new:   # unchanged and no torch.cuda use to look for: nothing to check
            continue
        try:
            old_tree = ast.parse(old)
        except (SyntaxError, ValueError):
            continue
        if a != b:
            try:
                new_tree = ast.parse(new)
            except SyntaxError as e:
                problems.append(f"{rel}: output does not parse: {e.msg} (line {e.lineno})")
                continue
            if defined_names(old_tree) != defined_names(new_tree) and not apex_rebinding(old_tree, new_tree):
                gone = sorted(set(defined_names(old_tree)) - set(defined_names(new_tree)))
                problems.append(f"{rel}: user identifiers changed: {gone[:5]}")
        else:
            new_tree = old_tree
        if "cuda" not in new:
            continue
        mapping = line_map(old, new) if a != b else {}
        for line in sorted(torch_cuda_lines(new_tree, same, guarded, t.host)):
            if (rel, mapping.get(line, line)) not in unsupported:
                problems.append(f"{rel}:{mapping.get(line, line)}: torch.cuda use left but not in unsupported_api.csv")
    return problems


def unsupported_drift(result, again) -> list:
    """(file, text) of unsupported uses found by converting the output again (`check` on it) but not left by the
    first conversion, or the other way round: check on convert's output must agree with convert's report."""
    first = Counter((f.file, f.old) for f in result.findings if f.action == "unsupported")
    second = Counter((f.file, f.old) for f in again.findings if f.action == "unsupported")
    return sorted((second - first) + (first - second))


def check_port(src: Path, label: str, target: str) -> tuple:
    """port-ext to `target`: the port_checks invariants, then a second port that changes nothing.
    (the row's text before its verdict, problems)"""
    work = Path(tempfile.mkdtemp(prefix="tp-port-"))
    try:
        result = port(src, target, work / "out", write_reports=False)
        stats, problems = check_tree(src, work / "out", result, load_map(target),
                                     lambda rel: _excluded(rel, DEFAULT_IGNORES))
        again = port(work / "out", target, work / "again", write_reports=False)
        if again.totals()["converted_refs"] or again.totals()["renamed_files"]:
            problems.append(f"second port changed {again.totals()['converted_refs']} references, "
                            f"renamed {again.totals()['renamed_files']} files")
        elif files_of(work / "out") != files_of(work / "again") or any(
                (work / "out" / f).read_bytes() != (work / "again" / f).read_bytes() for f in files_of(work / "out")):
            problems.append("second port wrote different files")
        if result.totals()["includes_broken"]:
            problems.append(f"port-ext itself reported {result.totals()['includes_broken']} broken includes")
        t = result.totals()
        row = (f"{label:22} {'port ' + target:12} {t['files']:6} {t['converted_refs']} refs converted, "
               f"{t['left_refs']} left, {t['needs_review']} to review, {t['renamed_files']} renamed, "
               f"{stats['sources_token_checked']} sources token-checked, {stats['includes_checked']} includes resolved, "
               f"{t['elapsed_seconds']:.1f}s")
        return row, problems
    finally:
        shutil.rmtree(work, ignore_errors=True)


def convert_and_check(label: str, src: Path, target: str) -> tuple:
    """Convert `src` for `target`, convert the output again, and check the invariants.
    (the row's text before its verdict, problems, the unsupported uses convert left)"""
    work = Path(tempfile.mkdtemp(prefix="tp-corpus-"))
    try:
        start = time.perf_counter()
        result = torchport.convert(src, target, work / "out", jobs=1)   # the corpus runs projects side by side
        elapsed = time.perf_counter() - start
        again = torchport.convert(work / "out", target, work / "again", write_reports=False, jobs=1)
        problems = check(src, work / "out", work / "out_report", target)
        lines, silent = device_line_counts(src, work / "out", work / "out_report", target)
        problems += [f"{where}: device line neither converted nor reported" for where in silent]
        if again.summary()["changes"]:
            changed = sorted({f"{f.file}:{f.line}" for f in again.findings if f.is_change})
            problems.append(f"second conversion changed {len(changed)} places, e.g. {changed[:3]}")
        odd = unsupported_drift(result, again)
        if odd:
            problems.append(f"the output's unsupported uses differ from what convert left: {len(odd)}, "
                            f"e.g. {odd[:3]}")
        s = result.summary()
        row = (f"{label:22} {target:12} {s['files']:6} {s['files_by_status'].get('converted', 0):5} "
               f"{s['changes']:7} {s['unsupported']:6} {s['advice']:6} {s['errors']:6} {elapsed:5.1f}s  "
               f"device lines {lines['converted']}/{lines['reported']}/{lines['kept']}/{lines['silent']}")
        left = sorted((f.file, f.line, f.old) for f in result.findings if f.action == "unsupported")
        return row, problems, left
    finally:
        shutil.rmtree(work, ignore_errors=True)


def analyze_project(label: str, src: Path, targets: str) -> tuple:
    """(the analyze row, {target: the unsupported uses analyze lists})"""
    analysis = analyze(src, targets, write_reports=False, jobs=1)
    s = analysis.summary()
    row = (f"{label:22} {'analyze':12} {s['files']:6} touchpoints {s['touchpoints']}, "
           f"{s['cuda_files']} CUDA files, {s['cuda_kernels']} kernels, {s['exported_ops']} exported ops, "
           f"{s['extension_call_sites']} call sites, {s['elapsed_seconds']:.1f}s; grades "
           + " ".join(f"{t}={r['grade']}" for t, r in s["readiness"].items()))
    return row, {t: sorted((f.file, f.line, f.old) for f in analysis.unsupported(t)) for t in targets.split(",")}


def verdict(row: str, problems: list) -> str:
    return "\n".join([f"{row}  {'ok' if not problems else f'{len(problems)} FAILED'}", *(f"    {p}" for p in problems[:20])])


class Inline:
    """A stand-in for a process pool of one: runs each task when it is submitted."""

    def submit(self, fn, *args):
        done: Future = Future()
        done.set_result(fn(*args))
        return done

    def shutdown(self):
        pass


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--projects", default=",".join(n for n, _ in PROJECTS))
    ap.add_argument("--targets", default=",".join(available_targets()))
    ap.add_argument("--jobs", "-j", type=int, default=default_jobs(), help="runs side by side (default: one per CPU)")
    ap.add_argument("--fetch", action="store_true", help="only download the projects into .corpus-cache/")
    args = ap.parse_args()
    wanted, targets = set(args.projects.split(",")), args.targets.split(",")
    projects = [(name, version, sdist(name, version)) for name, version in PROJECTS if name in wanted]
    ports = [(name, version, sdist(name, version)) for name, version in PORT_PROJECTS if name in wanted]
    if args.fetch:
        return 0
    # every analyze, convert and port is a task of its own; rows are printed in this order as their tasks end
    pool = ProcessPoolExecutor(args.jobs, mp_context=get_context("fork")) if args.jobs > 1 else Inline()
    failures = 0
    try:
        tasks = [(pool.submit(analyze_project, f"{name} {version}", src, args.targets),
                  [pool.submit(convert_and_check, f"{name} {version}", src, t) for t in targets])
                 for name, version, src in projects]
        port_tasks = [pool.submit(check_port, src, f"{name} {version}", t)
                      for name, version, src in ports for t in PORT_TARGETS]
        print(f"{'project':22} {'target':12} {'files':>6} {'conv':>5} {'changes':>7} {'unsup':>6} {'advice':>6} "
              f"{'errors':>6} {'time':>6}  checks", flush=True)
        for analysis, conversions in tasks:
            heading, listed = analysis.result()
            print(heading, flush=True)
            for target, conversion in zip(targets, conversions):
                row, problems, left = conversion.result()
                if left != listed[target]:
                    differ = sorted(set(left) ^ set(listed[target]))
                    problems.append(f"analyze and convert disagree on unsupported APIs: {len(differ)} differ, "
                                    f"e.g. {differ[:2]}")
                print(verdict(row, problems), flush=True)
                failures += bool(problems)
        for task in port_tasks:
            row, problems = task.result()
            print(verdict(row, problems), flush=True)
            failures += bool(problems)
    finally:
        pool.shutdown()
    print("corpus: all invariants hold" if not failures else f"corpus: {failures} project/target runs failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
