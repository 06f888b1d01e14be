"""Import statements: CUDA imports rewritten as a whole, the target's registration import added (and, with
`convert -s`, the launch script's device set from an environment variable after its imports).

These rules run once per file after the walk (`finalize`), because whether an
import can change depends on every use of the names it binds.
"""
from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING, Optional, cast

from ...core import codes
from ...core.finding import ADVICE, UNSUPPORTED
from ...kb.apimap import ADAPT, KEEP, MAP
from ...kb.apimap import UNSUPPORTED as RES_UNSUPPORTED
from ..checkers import Phase, checker
from ..reach import Place, anchor
from .api import (
    REFERENCE_CODES,
    TYPE_TEST_SAFE,
    adapt_call,
    can_adapt,
    guard_device_call,
    guard_name,
    imported_for_type_tests,
    needs_guard,
    rename_chain,
    report_unconverted,
    rule_for,
    type_tested,
)

if TYPE_CHECKING:
    from ...core.codes import Code
    from ...kb.apimap import Resolution
    from ..context import FileContext, ImportStmt
    from ..python import Ref

_FROM_MODULE = re.compile(r"from\s+([\w.]+)")


def _follows(bres: Resolution, ref: Ref, res: Resolution) -> bool:
    """Can this use keep its spelling when the import is rewritten to bres.new?"""
    if not res.rewrites or not (res.new == bres.new or res.new.startswith(bres.new + ".")):
        return False
    return res.kind != ADAPT or can_adapt(ref, res)


@checker(*REFERENCE_CODES, phase=Phase.FILE)
def finalize_bindings(tree: ast.Module, ctx: FileContext) -> None:  # noqa: C901
    """Rewrite imports from CUDA modules when every use of the name can follow (see the TP1 family)."""
    plans: dict[int, tuple[ImportStmt, dict[str, Resolution]]] = {}   # id(stmt) -> (stmt, {local: resolution})
    for b in ctx.all_bindings():
        bres = ctx.api.resolve(b.qualname)
        if bres is None or b.converted:
            continue
        r = rule_for(ctx, bres)
        if b.ambiguous:
            for stmt in b.stmts:
                ctx.report(stmt, r, UNSUPPORTED if bres.qualname.startswith("torch.cuda") else ADVICE,
                           f"not converted: '{b.local}' is imported from different modules in this file; "
                           "convert these imports and their uses by hand")
            for ref, res in b.uses:
                if res.qualname.startswith("torch.cuda"):
                    ctx.report(ref.node, rule_for(ctx, res), UNSUPPORTED, f"not converted: '{b.local}' is ambiguous here")
            continue
        if b.kind == "package":  # `import apex`: its uses were handled where they stand
            if not bres.rewrites:
                for stmt in b.stmts:
                    ctx.report(stmt, r, UNSUPPORTED if bres.kind == RES_UNSUPPORTED else ADVICE,
                               bres.message, bres.category)
            continue
        if bres.category in TYPE_TEST_SAFE and imported_for_type_tests(ctx, b):
            continue  # `from torch.nn import DataParallel` read only by type tests: imports and asks alike anywhere
        if bres.rewrites and all(_follows(bres, ref, res) for ref, res in b.uses):
            for stmt in b.stmts:
                plans.setdefault(id(stmt), (stmt, {}))[1][b.local] = bres
            for ref, res in b.uses:
                tail_old = "".join("." + p for p in ref.parts)
                tail_new = res.new[len(bres.new):]
                if tail_new != tail_old:
                    rename_chain(ctx, ref.node, b.local + tail_new, rule_for(ctx, res), res.message, res.category)
                if needs_guard(ctx, ref, res):
                    guard_device_call(ctx, ref, res, rule_for(ctx, res))
                if res.kind == ADAPT:
                    adapt_call(ctx, ref, res, rule_for(ctx, res))
            continue
        if bres.kind in (KEEP, RES_UNSUPPORTED):
            for stmt in b.stmts:
                ctx.report(stmt, r, UNSUPPORTED if bres.kind == RES_UNSUPPORTED else ADVICE, bres.message, bres.category)
        for ref, res in b.uses:
            if type_tested(ctx, ref, res):
                continue  # as `isinstance(m, nn.DataParallel)`: the same question on every target
            ur = rule_for(ctx, res)
            at = ref.node.lineno
            if res.kind == MAP and needs_guard(ctx, ref, res):
                rename_chain(ctx, ref.node, ctx.spell(res.new, at), ur, res.message, res.category, quiet=True)
                guard_device_call(ctx, ref, res, ur)
            elif res.kind == MAP:
                rename_chain(ctx, ref.node, ctx.spell(res.new, at), ur, res.message, res.category)
            elif res.kind == ADAPT and can_adapt(ref, res):
                rename_chain(ctx, ref.node, ctx.spell(res.new, at), ur, res.message, res.category, quiet=True)
                adapt_call(ctx, ref, res, ur)
            elif res.kind == ADAPT:   # passed on where no call shows where the device goes
                report_unconverted(ctx, ref.node, res, ur,
                                   f"not converted: {b.local} is used here without a call torchport can give the "
                                   f"device to ({res.new} needs it); insert it by hand")
            elif not (res.kind == KEEP and bres.kind == KEEP):  # KEEP uses of a KEEP import: reported there
                report_unconverted(ctx, ref.node, res, ur,
                                   f"not converted: {b.local} is also used for APIs {ctx.target.name} lacks")
    for stmt, by_local in plans.values():
        _rewrite_import(ctx, stmt, by_local)


def _rewrite_import(ctx: FileContext, stmt: ImportStmt, by_local: dict[str, Resolution]) -> None:
    first = next(iter(by_local.values()))
    r = rule_for(ctx, first)
    message = "; ".join(sorted({res.message for res in by_local.values() if res.message}))
    if isinstance(stmt, ast.Import):
        names: list[str] = []
        for alias in stmt.names:
            res = by_local.get(alias.asname) if alias.asname else None
            name = res.new if res else alias.name
            names.append(f"{name} as {alias.asname}" if alias.asname else name)
        ctx.replace(stmt, "import " + ", ".join(names), r, message, first.category)
        ctx.target_imports.append(stmt)
        return
    groups: dict[str, list[str]] = {}   # module -> the names imported from it
    renamed = False
    for alias in stmt.names:
        local = alias.asname or alias.name
        res = by_local.get(local)
        # a binding's `from` import names its module (python.collect_bindings)
        module, name = res.new.rsplit(".", 1) if res else (cast(str, stmt.module), alias.name)
        renamed |= bool(res) and name != alias.name
        groups.setdefault(module, []).append(name if name == local else f"{name} as {local}")
    if len(groups) == 1 and not renamed:
        m = _FROM_MODULE.match(ctx.text(stmt))
        assert m is not None  # the statement is a `from` import
        start = ctx.span(stmt)[0] + m.start(1)
        ctx.replace((start, start + len(m.group(1))), next(iter(groups)), r, message, first.category)
    else:
        start = ctx.span(stmt)[0]
        line_start = ctx.line_starts[stmt.lineno - 1]
        indent = ctx.source[line_start:start]
        sep = ctx.newline + indent if not indent.strip() else "; "
        ctx.replace(stmt, sep.join(f"from {m} import {', '.join(n)}" for m, n in groups.items()),
                    r, message, first.category)
    ctx.target_imports.append(stmt)


# ------------------------------------------------------------ insertion points
def _line_end(ctx: FileContext, stmt: ast.stmt) -> int:
    """Offset just after the line holding the end of `stmt` (or the end of the file)."""
    end = cast(int, stmt.end_lineno)   # a parsed statement has its end
    return ctx.line_starts[end] if end < len(ctx.line_starts) else len(ctx.source)


_NOWHERE = Place((), None, False)   # the place of an import statement reach.places did not see (none)
NOQA = "  # noqa: F401"  # on registration imports: linters would drop an import nothing seems to use


def _insert_after(ctx: FileContext, stmt: ast.stmt, text: str, r: Code, message: str, comment: str = "",
                  leading: bool = False) -> None:
    """`text` on a line of its own after `stmt` (after it on its line when that is shared); `leading`: an import,
    before what other rules insert there (FileContext.insert)."""
    start = ctx.span(stmt)[0]
    line_start = ctx.line_starts[stmt.lineno - 1]
    indent = ctx.source[line_start:start]
    tail = ctx.source[ctx.span(stmt)[1]:_line_end(ctx, stmt)]
    if indent.strip() or tail.strip() and not tail.lstrip().startswith("#"):
        ctx.insert(ctx.span(stmt)[1], f"; {text}", r, message, shown=text, leading=leading)  # shares its line
        return
    pos = _line_end(ctx, stmt)
    lead = "" if pos == 0 or ctx.source[pos - 1] in "\r\n" else ctx.newline
    ctx.insert(pos, f"{lead}{indent}{text}{comment}{ctx.newline}", r, message, shown=text, anchor=ctx.span(stmt)[1],
               leading=leading)


def _insert_before(ctx: FileContext, stmt: ast.stmt, text: str, r: Code, message: str, comment: str = "",
                   leading: bool = False) -> None:
    start = ctx.span(stmt)[0]
    line_start = ctx.line_starts[stmt.lineno - 1]
    indent = ctx.source[line_start:start]
    if indent.strip():
        ctx.insert(start, f"{text}; ", r, message, shown=text, leading=leading)
    else:
        ctx.insert(line_start, f"{indent}{text}{comment}{ctx.newline}", r, message, shown=text, leading=leading)


def top_statement(tree: ast.Module) -> tuple[Optional[ast.stmt], Optional[ast.stmt]]:
    """The first statement after the module docstring and __future__ imports (or None)."""
    body = tree.body
    i = 0
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant) \
            and isinstance(body[0].value.value, str):
        i = 1
    while i < len(body) and isinstance(body[i], ast.ImportFrom) \
            and cast(ast.ImportFrom, body[i]).module == "__future__":   # (an indexed isinstance is not narrowed)
        i += 1
    return (body[i] if i < len(body) else None), (body[i - 1] if i else None)


def _insert_at_top(ctx: FileContext, tree: ast.Module, text: str, r: Code, message: str, comment: str = "") -> None:
    """An import, first after the docstring and __future__ imports (before what other rules insert there)."""
    first, last_skipped = top_statement(tree)
    if first is not None:
        _insert_before(ctx, first, text, r, message, comment, leading=True)
    elif last_skipped is not None:
        _insert_after(ctx, last_skipped, text, r, message, comment, leading=True)
    else:
        ctx.insert(len(ctx.source), text + comment + ctx.newline, r, message, shown=text, leading=True)


def _registers(ctx: FileContext, module: str, first: Optional[ImportStmt]) -> bool:
    """Does an import of `module` (or something in it) run where torch is first imported: at the module level,
    or in the function that imports torch when the file imports it only there?  One in another function
    (accelerate's `def is_npu_available(): import torch_npu`) runs only when that function is called, maybe
    never: the device the file's other lines use would not be there.  One under `if TYPE_CHECKING:` never runs."""
    return any((b.scope is None or first is not None and b.visible_at(first.lineno))
               and (b.qualname == module or b.qualname.startswith(module + ".")) for b in ctx.runtime_bindings())


def _registration_point(ctx: FileContext, first: ImportStmt) -> tuple[ast.stmt, bool]:
    """(statement, before it?) where the registration import goes: before an import rewritten to the target (it
    needs the device registered) that comes first in the same block; else after the statement holding the first
    torch import that runs (python.collect_bindings) once torch is surely loaded (reach.anchor: the import itself,
    or the `try:`/`if` around it that loads torch on every path).  Never in a block that does not run (`if
    TYPE_CHECKING:`): the first torch import is never there, nor is a rewritten import counted from there."""
    place = ctx.places.get(id(first), _NOWHERE)
    early = [s for s in ctx.target_imports if (s.lineno, s.col_offset) <= (first.lineno, first.col_offset)
             and ctx.places.get(id(s), _NOWHERE) == place]   # the same block, or a branch beside it
    if early:
        return min(early, key=lambda s: (s.lineno, s.col_offset)), True
    return anchor(first, place, "torch"), False


@checker(codes.TP001, phase=Phase.FILE)
def add_registration_import(tree: ast.Module, ctx: FileContext) -> None:
    module = ctx.target.register
    wanted = ctx.edits or ctx.launch or ctx.needs_register
    first = ctx.first_torch_import
    if first is not None and ctx.register_at_module and ctx.places.get(id(first), _NOWHERE).function is not None:
        first = None   # module-level code convert wrote names the device: registering in a function is too late
    if not module or not wanted or _registers(ctx, module, first):
        return
    text = f"import {module}"
    message = f"registers the '{ctx.target.device}' device with PyTorch"
    r = codes.TP001
    if first is None:
        if ctx.launch or ctx.needs_register:
            _insert_at_top(ctx, tree, text, r, message, NOQA)
        return
    at, before = _registration_point(ctx, first)
    if before:
        _insert_before(ctx, at, text, r, message, NOQA, leading=True)
    else:
        _insert_after(ctx, at, text, r, message, NOQA, leading=True)


@checker(codes.TP003, phase=Phase.FILE)
def add_runtime_shim(tree: ast.Module, ctx: FileContext) -> None:
    """--runtime-shim: the target's run-time mapping, first in an entry script (the run passes ctx.shim)."""
    shim = ctx.target.runtime_shim
    if not ctx.shim or not shim:
        return
    words = shim.split()
    module = words[1] if words[0] == "import" else f"{words[1]}.{words[3]}"
    if any(b.qualname == module or b.qualname.startswith(module + ".") for b in ctx.runtime_bindings()):
        return
    _insert_at_top(ctx, tree, shim, codes.TP003, "maps the CUDA calls of the libraries the project calls, at run "
                   "time", NOQA + " (torchport --runtime-shim)")


@checker(codes.TP404, phase=Phase.FILE)
def device_from_env(tree: ast.Module, ctx: FileContext) -> None:
    """convert -s: the launch script sets the current device from an environment variable, after its top-level
    imports (and the registration import, made just before) and before any `if __name__ == "__main__":`."""
    var, t, r = ctx.device_env, ctx.target, codes.TP404
    if not var:
        return
    res = ctx.api.resolve("torch.cuda.set_device")
    if not t.device_index or res is None or res.kind != MAP:
        ctx.report_span(0, 0, r, ADVICE, f"--specify-device: {t.title} has no device index to set; nothing written")
        return
    if any(isinstance(n, ast.Name) and n.id == var or isinstance(n, (ast.FunctionDef, ast.ClassDef)) and n.name == var
           for n in ast.walk(tree)):
        ctx.report_span(0, 0, r, ADVICE, f"--specify-device: the name {var} is taken in this file; nothing written")
        return
    main = next((i for i, s in enumerate(tree.body) if isinstance(s, ast.If) and "__main__" in ctx.text(s.test)),
                len(tree.body))
    imports = [s for s in tree.body[:main] if isinstance(s, (ast.Import, ast.ImportFrom))]
    if not imports:
        ctx.report_span(0, 0, r, ADVICE, "--specify-device: no top-level import to set the device after; nothing "
                                         "written")
        return
    last = imports[-1]
    start, end = ctx.span(last)
    if ctx.source[ctx.line_starts[last.lineno - 1]:start].strip() or \
            ctx.source[end:_line_end(ctx, last)].strip()[:1] not in ("", "#"):
        ctx.report(last, r, ADVICE, "--specify-device: this import shares its line; nothing written")
        return
    lines = [f'{var} = int({ctx.spell("os.environ")}.get("{var}", "0"))',
             f"if {ctx.spell(guard_name(t))}():", f"    {ctx.spell(res.new)}({var})"]
    _insert_after(ctx, last, ctx.newline.join(lines), r, f"the device index comes from ${var} (0 when unset)")


@checker(codes.TP002, phase=Phase.FILE)
def add_missing_imports(tree: ast.Module, ctx: FileContext) -> None:
    for module in sorted(ctx.needs_imports):
        _insert_at_top(ctx, tree, f"import {module}", codes.TP002, "needed by the rewritten code")
