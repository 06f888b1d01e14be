"""`convert --distributed`: a single-device training script made multi-device (torchrun + DDP).

The plan is made on the original CUDA source and written as CUDA code (`nccl`,
`torch.cuda.set_device`); the normal conversion then maps it to the target like
any other code, so each target's names have one home.  What it does, in the
function (or module) that builds the model and the training DataLoader:

  - reads LOCAL_RANK / RANK / WORLD_SIZE from torchrun's environment, starts the
    process group and selects the device of this process;
  - gives the training DataLoader a DistributedSampler (the loader's shuffle moves
    to the sampler) and calls set_epoch at the top of the epoch loop;
  - wraps the model in DistributedDataParallel just before training starts (after
    optimizer / AMP set-up); attribute access after that goes through `.module`,
    so checkpoints keep the single-device layout;
  - runs print / logging / torch.save on rank 0 only;
  - points hard-coded device indices (`"cuda:0"`, `.cuda(0)`) at this process's device.

Anything it cannot do completely is refused with the reason (`Refusal`): a
script is never half converted.  `launcher()` writes run_distributed.sh.
"""
from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, NoReturn, Optional, Union, cast

from ..core import codes
from ..core.edits import apply as apply_edits
from ..core.errors import UsageError
from ..core.finding import ADVICE
from ..core.textfile import Text
from ..kb.apimap import ApiMap
from .checkers import Phase, checker, found_in
from .context import FileContext
from .python import SourceFile

if TYPE_CHECKING:
    from collections.abc import Collection, Iterator, Sequence

    from ..backends import Target
    from ..core.finding import Finding
    from .checkers import Checker

LAUNCHER = "run_distributed.sh"
CATEGORY = "distributed-mode"

# Calls that should happen once, not once per process (qualified names, or method names on logger-like objects).
RANK0_CALLS = ("print", "torch.save", "pprint.pprint")
LOGGING_METHODS = ("debug", "info", "warning", "warn", "error", "critical", "exception", "log")
LOGGER_NAMES = re.compile(r"^_?(log|logger|logging|LOGGER|LOG)$")
# Attributes that stay on the DDP wrapper (everything else on the wrapped model goes through .module).
DDP_KEEPS = frozenset({"train", "eval", "forward", "zero_grad", "parameters", "named_parameters", "to", "cuda",
                       "cpu", "requires_grad_", "no_sync", "join", "register_comm_hook", "training", "module"})
DATALOADER = "torch.utils.data.DataLoader"
DATAPARALLEL = ("torch.nn.DataParallel", "torch.nn.parallel.DataParallel",
                "torch.nn.parallel.data_parallel.DataParallel")
ALREADY = ("torch.distributed.init_process_group", "torch.nn.parallel.DistributedDataParallel",
           "torch.utils.data.distributed.DistributedSampler", "torch.utils.data.DistributedSampler")
_DEVICE_INDEX = re.compile(r"cuda:\d+")

Function = Union[ast.FunctionDef, ast.AsyncFunctionDef]
ScopeNode = Union[ast.Module, Function]           # where the training DataLoader is made
Loop = Union[ast.For, ast.AsyncFor, ast.While]    # an epoch loop
Site = Union[ast.For, ast.AsyncFor, ast.Call]     # where training uses the loader: a loop over it, a call given it


class Refusal(UsageError):
    """The script cannot be made multi-device completely: nothing is written."""


@dataclass
class Plan:
    text: str                        # the multi-device CUDA source (converted for the target afterwards)
    findings: list[Finding] = field(default_factory=list)   # in the original file's lines


def _refuse(rel: str, reason: str) -> NoReturn:
    raise Refusal(f"--distributed: {rel}: {reason}")


class _Script:
    """The parsed main script with the helpers the plan needs."""

    def __init__(self, rel: str, text: str, target: Target) -> None:
        self.rel = rel
        src = SourceFile(rel, text)
        try:
            self.tree = src.tree
        except SyntaxError as e:
            _refuse(rel, f"syntax error at line {e.lineno}: {e.msg}")
        self.newline = Text(text, "utf-8").newline  # the file's own line ending on every inserted line
        self.ctx = FileContext(rel, text, ApiMap(target), self.newline, src.line_starts)
        templates, _ = src.bindings()
        self.ctx.bindings = {k: [b.fresh() for b in v] for k, v in templates.items()}
        self.text = text
        self.parents: dict[ast.AST, ast.AST] = {}
        for node in ast.walk(self.tree):
            for child in ast.iter_child_nodes(node):
                self.parents[child] = node
        self.names = {n.id for n in ast.walk(self.tree) if isinstance(n, ast.Name)}
        self.names |= {n.name for n in ast.walk(self.tree) if isinstance(n, (ast.FunctionDef, ast.ClassDef,
                                                                              ast.AsyncFunctionDef))}
        self.names |= {a.asname or a.name.split(".")[0] for n in ast.walk(self.tree)
                       if isinstance(n, (ast.Import, ast.ImportFrom)) for a in n.names}

    def qualname(self, node: ast.AST) -> str:
        return self.ctx.qualname(node) or (node.id if isinstance(node, ast.Name) else "")

    def fresh(self, name: str) -> str:
        while name in self.names:
            name += "_"
        self.names.add(name)
        return name

    def scope_of(self, node: ast.AST) -> ScopeNode:
        """The innermost function holding node, or the module."""
        up = self.parents.get(node)
        while up is not None:
            if isinstance(up, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Module)):
                return up
            up = self.parents.get(up)
        raise ValueError("node outside the module")

    def in_scope(self, scope: ast.AST) -> Iterator[ast.AST]:
        """Nodes of scope, not descending into nested functions or classes."""
        stack = list(ast.iter_child_nodes(scope))
        while stack:
            node = stack.pop()
            yield node
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda)):
                stack.extend(ast.iter_child_nodes(node))

    def block_of(self, stmt: ast.stmt) -> tuple[list[ast.stmt], int]:
        """(the statement list holding stmt, its index there)."""
        parent = self.parents[stmt]
        for name in ("body", "orelse", "finalbody", "handlers"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and stmt in block:
                return block, block.index(stmt)
        raise ValueError("statement without a block")

    def enclosing_stmt(self, node: ast.AST) -> ast.stmt:
        while not isinstance(node, ast.stmt):
            node = self.parents[node]
        return node

    def line_start(self, lineno: int) -> int:
        return self.ctx.line_starts[lineno - 1]

    def indent(self, stmt: ast.stmt) -> str:
        start = self.line_start(stmt.lineno)
        return self.text[start:self.ctx.offset(stmt.lineno, stmt.col_offset)]

    def starts_line(self, stmt: ast.stmt) -> bool:
        return not self.indent(stmt).strip()

    def body_start(self, node: Union[Function, Loop]) -> ast.stmt:
        """First statement of a function/loop body, after a docstring."""
        body = node.body
        first = body[0]
        if (isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and len(body) > 1
                and isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)):
            first = body[1]
        if not self.starts_line(first):
            _refuse(self.rel, f"line {first.lineno}: the body starts on the header's line; put it on its own line")
        return first


def _assigned_names(stmt: ast.stmt) -> list[ast.Name]:
    targets: list[ast.expr] = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target] if isinstance(
        stmt, (ast.AnnAssign, ast.AugAssign)) else []
    out: list[ast.Name] = []
    for t in targets:
        out += [n for n in ast.walk(t) if isinstance(n, ast.Name)]
    return out


@dataclass
class Layout:
    """What the distributed-mode checkers share: the training loader, where it is used, the names to write."""
    scope: ScopeNode                 # the function (or module) that makes the training DataLoader
    where: str                       # how messages name it
    loaders: list[ast.Call]          # every DataLoader(...) call
    train: ast.Call                  # the training one
    loader_name: str
    sites: list[Site]                # where training uses it
    first_use: Site                  # the first of the sites
    epoch_loops: set[Loop]
    torch_ref: str                   # the module's name for torch
    dist: str                        # ... and for torch.distributed
    consts: dict[str, str]           # LOCAL_RANK / RANK / WORLD_SIZE -> fresh names
    sampler: str
    after_imports: int               # the line the set-up goes before
    model_vars: list[str]


def plan(rel: str, text: str, target: Target, model_var: str = "model", loader_var: Optional[str] = None) -> Plan:
    """The multi-device version of a training script, or a Refusal saying why not."""
    s = _Script(rel, text, target)
    layout = _layout(s, target, model_var, loader_var)
    for c in _distributed_checkers():
        c.check(s, layout)
    new, kept, _ = apply_edits(text, s.ctx.edits)
    try:
        ast.parse(new)
    except SyntaxError as e:  # a bug of ours: never hand it on
        _refuse(rel, f"internal error: the multi-device script does not parse (line {e.lineno}: {e.msg}); "
                     "please report it")
    findings = [e.finding for e in kept if e.finding is not None] + s.ctx.findings
    findings.sort(key=lambda f: (f.line, f.col, f.rule))
    return Plan(new, findings)


def _distributed_checkers() -> list[Checker]:
    """The distributed-phase checkers, in the order they are written: this module's (converter.rules'
    builtin_checkers() lists them with every other checker; it imports this module, which does not import it back)."""
    return [c for c in found_in(sys.modules[__name__]) if c.phase is Phase.DISTRIBUTED]


def _layout(s: _Script, target: Target, model_var: str, loader_var: Optional[str]) -> Layout:
    """Find the training loader and its uses, or refuse; choose the names the checkers write."""
    rel, ctx = s.rel, s.ctx
    selects = ctx.api.resolve("torch.cuda.set_device")
    if selects is None or not selects.rewrites:
        _refuse(rel, f"{target.title} has no per-process device selection (torch.cuda.set_device); "
                     "--distributed needs one device per process")
    calls = [n for n in ast.walk(s.tree) if isinstance(n, ast.Call)]
    done = [c for c in calls if s.qualname(c.func) in ALREADY]
    if done:
        _refuse(rel, f"line {done[0].lineno}: the script is already distributed ({s.qualname(done[0].func)})")
    loaders = [c for c in calls if s.qualname(c.func) == DATALOADER]
    if not loaders:
        _refuse(rel, "no torch.utils.data.DataLoader: --distributed shards a DataLoader's dataset between processes, "
                     "and this script loads its data another way")
    named: dict[str, list[ast.Call]] = {}
    for c in loaders:
        stmt = s.parents[c]
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            named.setdefault(stmt.targets[0].id, []).append(c)
    train = _training_loader(s, named, loaders, loader_var)
    # _training_loader answers one of `named`: a `name = DataLoader(...)`
    loader_name = cast(ast.Name, cast(ast.Assign, s.parents[train]).targets[0]).id
    scope = s.scope_of(train)
    where = "the module" if isinstance(scope, ast.Module) else f"{scope.name}()"
    for c in named[loader_name]:
        if c is not train:
            _refuse(rel, f"line {c.lineno}: `{loader_name}` is assigned twice; --distributed needs one training loader")
    for kw in train.keywords:
        if kw.arg in ("sampler", "batch_sampler"):
            _refuse(rel, f"line {train.lineno}: the training DataLoader already has a {kw.arg}; wrap it in a "
                         "DistributedSampler yourself (torch.utils.data.distributed)")
    sites = _uses(s, scope, loader_name)
    if not sites:
        _refuse(rel, f"`{loader_name}` is never iterated or passed on in {where}")
    first_use = min(sites, key=lambda n: (n.lineno, n.col_offset))
    epoch_loops = {loop for loop in (_epoch_loop(s, scope, site) for site in sites) if loop is not None}
    torch_ref = _module_alias(s, "torch") or "torch"
    dist = _module_alias(s, "torch.distributed") or s.fresh("dist")
    consts = {k: s.fresh(k) for k in ("LOCAL_RANK", "RANK", "WORLD_SIZE")}
    return Layout(scope, where, loaders, train, loader_name, sites, first_use, epoch_loops, torch_ref, dist, consts,
                  s.fresh("train_sampler"), _after_imports(s), [v.strip() for v in model_var.split(",") if v.strip()])


@checker(codes.TP961, phase=Phase.DISTRIBUTED)
def process_group_setup(s: _Script, lay: Layout) -> None:
    """Ranks after the leading imports; process group and device at the top of the scope."""
    ctx, text, nl, consts, dist = s.ctx, s.text, s.newline, lay.consts, lay.dist
    head: list[str] = []
    if _module_alias(s, "torch") is None:
        head.append("import torch")
    for module in ("atexit", "os"):
        if _module_alias(s, module) is None:
            head.append(f"import {module}")
    os_name = _module_alias(s, "os") or "os"
    if _module_alias(s, "torch.distributed") is None:
        head.append(f"import torch.distributed as {dist}")
    head += ["", "# torchport --distributed: one process per device, started by torchrun (see run_distributed.sh)",
             f'{consts["LOCAL_RANK"]} = int({os_name}.environ.get("LOCAL_RANK", 0))',
             f'{consts["RANK"]} = int({os_name}.environ.get("RANK", 0))',
             f'{consts["WORLD_SIZE"]} = int({os_name}.environ.get("WORLD_SIZE", 1))']
    init = [f'{dist}.init_process_group(backend="nccl")',
            f"{_module_alias(s, 'atexit') or 'atexit'}.register({dist}.destroy_process_group)  # before exit, "
            "not while Python shuts down", f'{lay.torch_ref}.cuda.set_device({consts["LOCAL_RANK"]})']
    at = lay.after_imports
    module_scope = isinstance(lay.scope, ast.Module)
    block_text = nl.join(head + (init if module_scope else [])) + nl
    if at <= len(ctx.line_starts):
        pos = s.line_start(at)
        if text[pos:pos + 1].strip() or text[pos:pos + 1] == "":  # code follows at once: keep a blank line
            block_text += nl
    else:  # the last import ends the file without a newline
        pos, block_text = len(text), nl + block_text
    ctx.insert(pos, block_text, codes.TP961,
               "ranks from torchrun's environment" + ("; process group and device of this process"
                                                      if module_scope else ""), shown="; ".join(head[-3:]))
    if not isinstance(lay.scope, ast.Module):   # = not module_scope, said so that lay.scope is a function
        first = s.body_start(lay.scope)
        ind = s.indent(first)
        ctx.insert(s.line_start(first.lineno), "".join(ind + line + nl for line in init), codes.TP961,
                   "start the process group and select this process's device", shown="; ".join(init))


@checker(codes.TP962, phase=Phase.DISTRIBUTED)
def distributed_sampler(s: _Script, lay: Layout) -> None:
    """Sampler before the loader, the loader uses it, set_epoch in the epoch loop."""
    ctx, rel, train, sampler, nl = s.ctx, s.rel, lay.train, lay.sampler, s.newline
    assign = cast(ast.Assign, s.parents[train])   # the training loader is a `name = DataLoader(...)` (_layout)
    dataset = train.args[0] if train.args else next((k.value for k in train.keywords if k.arg == "dataset"), None)
    if dataset is None:
        _refuse(rel, f"line {train.lineno}: the training DataLoader has no dataset argument")
    shuffle = next((k for k in train.keywords if k.arg == "shuffle"), None)
    shuffle_text = ctx.text(shuffle.value) if shuffle is not None else "False"
    spread = [k for k in train.keywords if k.arg is None]
    if spread and shuffle is None:  # DataLoader(ds, **kwargs): shuffle may be in there
        if len(spread) > 1 or not isinstance(spread[0].value, ast.Name):
            _refuse(rel, f"line {train.lineno}: the training DataLoader takes its options from "
                         f"{', '.join(ctx.text(k) for k in spread)}; torchport cannot tell whether they shuffle")
        kwargs = spread[0].value.id
        shuffle_text = f'{kwargs}.get("shuffle", False)'
        ctx.replace(spread[0], f'**{{**{kwargs}, "shuffle": False}}', codes.TP962,
                    "the sampler shuffles, as the options asked")
    sampler_line = (f"{sampler} = {lay.torch_ref}.utils.data.distributed.DistributedSampler({ctx.text(dataset)}, "
                    f"shuffle={shuffle_text})")
    ctx.insert(s.line_start(assign.lineno), s.indent(assign) + sampler_line + nl, codes.TP962,
               "each process loads its own shard of the dataset", shown=sampler_line)
    if not isinstance(dataset, ast.Name):
        ctx.replace(dataset, f"{sampler}.dataset", codes.TP962, "the dataset is built once, for the sampler")
    if shuffle is not None:
        ctx.replace(ctx.span(shuffle), f"sampler={sampler}", codes.TP962, "the sampler shuffles")
    else:
        ctx.add_argument(train, f"sampler={sampler}", codes.TP962, "the DataLoader draws from the sampler")
    world = lay.consts["WORLD_SIZE"]
    ctx.report(train, codes.TP962, ADVICE,
               f"each of the {world} processes loads batch_size samples per "
               f"step: the global batch is {world} times larger; scale the learning rate or divide "
               "batch_size", category=CATEGORY)
    for c in lay.loaders:
        if c is not train:
            ctx.report(c, codes.TP962, ADVICE, "not sharded: every process iterates this whole DataLoader "
                       "(fine for evaluation; results are the same on every rank)", category=CATEGORY)
    for loop in sorted(lay.epoch_loops, key=lambda n: n.lineno):
        if isinstance(loop, ast.While) or not isinstance(loop.target, ast.Name):
            _refuse(rel, f"line {loop.lineno}: cannot tell the epoch number of this loop for set_epoch; "
                         "use `for epoch in range(...)`")
        first = s.body_start(loop)
        call = f"{sampler}.set_epoch({loop.target.id})"
        ctx.insert(s.line_start(first.lineno), s.indent(first) + call + nl, codes.TP962,
                   "a different shuffle in every epoch", shown=call)
    if not lay.epoch_loops:
        ctx.report(lay.first_use, codes.TP962, ADVICE, "no epoch loop around the training loop: one pass over the "
                   "data, so set_epoch is not needed", category=CATEGORY)


@checker(codes.TP963, phase=Phase.DISTRIBUTED)
def ddp_wrap(s: _Script, lay: Layout) -> None:
    """Each model wrapped in DDP before training starts."""
    for var in lay.model_vars:
        _wrap_model(s, lay.scope, lay.where, lay.first_use, var, lay.torch_ref)


@checker(codes.TP964, phase=Phase.DISTRIBUTED)
def rank0_only(s: _Script, lay: Layout) -> None:
    """Output and checkpoints once."""
    once = [st for st in ast.walk(s.tree) if isinstance(st, ast.Expr) and isinstance(st.value, ast.Call)
            and (s.qualname(st.value.func) in RANK0_CALLS or _is_logging(s, st.value))
            and not (st in s.tree.body and st.lineno < lay.after_imports)]  # module code before the set-up: no RANK
    for group in _runs(s, once):
        _guard(s, group, f"{lay.consts['RANK']} == 0")


@checker(codes.TP965, phase=Phase.DISTRIBUTED)
def device_indices(s: _Script, lay: Layout) -> None:
    """Hard-coded device indices point at this process's device."""
    ctx = s.ctx
    for node in ast.walk(s.tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and _DEVICE_INDEX.fullmatch(node.value):
            q = ctx.text(node)[0]
            ctx.replace(node, f"{q}cuda{q}", codes.TP965, "the bare device type is this process's device")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.args:
            if node.func.attr == "cuda" and isinstance(node.args[0], ast.Constant) and len(node.args) == 1:
                ctx.replace((ctx.span(node.func)[1], ctx.span(node)[1]), "()", codes.TP965,
                            "the current device is this process's device")
            elif s.qualname(node.func) == "torch.cuda.set_device":
                ctx.replace(node.args[0], lay.consts["LOCAL_RANK"], codes.TP965, "this process's device")


def _wrap_model(s: _Script, scope: ScopeNode, where: str, first_use: Site, var: str, torch_ref: str) -> None:
    """DDP around `var` right before the statement that starts training; DataParallel removed; attribute
    access after the wrap through .module (in scope, and in module functions only called after it)."""
    ctx, rel = s.ctx, s.rel
    assigns = [st for st in s.in_scope(scope) if isinstance(st, ast.stmt)
               and any(n.id == var for n in _assigned_names(st))]
    if not assigns:
        _refuse(rel, f"no assignment to `{var}` in {where}, where the training DataLoader is made; name the model "
                     "variable with --model-var (several models: --model-var a,b)")
    last_assign = max(assigns, key=lambda n: (n.lineno, n.col_offset))
    made, start = _common_block(s, scope, last_assign, s.enclosing_stmt(first_use))
    if made is start:
        _refuse(rel, f"line {first_use.lineno}: training starts in another branch of the statement where "
                     f"`{var}` is made (line {last_assign.lineno}); make the model before it")
    if (start.lineno, start.col_offset) <= (made.lineno, made.col_offset):
        _refuse(rel, f"line {last_assign.lineno}: `{var}` is assigned again after training starts "
                     f"(line {start.lineno}); DDP must wrap the final model")
    if not s.starts_line(start):
        _refuse(rel, f"line {start.lineno}: put the statement that starts training on its own line")
    wrap = f"{var} = {torch_ref}.nn.parallel.DistributedDataParallel({var})"
    ctx.insert(s.line_start(start.lineno), s.indent(start) + wrap + s.newline, codes.TP963,
               "gradients are averaged across processes", shown=wrap)
    for st in assigns:
        for value in ast.walk(getattr(st, "value", None) or ast.Pass()):
            if isinstance(value, ast.Call) and s.qualname(value.func) in DATAPARALLEL and value.args:
                ctx.replace(value, ctx.text(value.args[0]), codes.TP963,
                            "DistributedDataParallel replaces DataParallel")
    after = (start.lineno, start.col_offset)
    later = [n for n in s.in_scope(scope)   # located nodes (they have both; the type checker asks for each)
             if hasattr(n, "lineno") and hasattr(n, "col_offset") and (n.lineno, n.col_offset) >= after]
    if isinstance(scope, ast.Module):  # functions using the global model, called only once it is wrapped
        for f in _global_users(s, var):
            called = [n for n in s.in_scope(scope) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                      and n.func.id == f.name]
            if called and all((c.lineno, c.col_offset) >= after for c in called):
                later += list(s.in_scope(f))
    for node in later:
        if (isinstance(node, ast.Call) and s.qualname(node.func) == "torch.save" and node.args
                and isinstance(node.args[0], ast.Name) and node.args[0].id == var):
            ctx.replace(node.args[0], f"{var}.module", codes.TP963, "save the model, not its DDP wrapper")
        elif (isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == var
                and node.attr not in DDP_KEEPS):
            ctx.replace(node.value, f"{var}.module", codes.TP963, f"`{node.attr}` belongs to the wrapped model")
        elif isinstance(node, ast.Call):
            reached = _module_attributes(s, node, var)
            if reached:
                ctx.report(node, codes.TP963, ADVICE,
                           f"passes the DistributedDataParallel wrapper to a function that "
                           f"uses {', '.join(sorted(reached))} of it: reach those through `.module` there",
                           category=CATEGORY)


def _locals(f: Function) -> set[str]:
    """Names a function binds itself (parameters, assignments, loop targets, imports)."""
    args = f.args
    out = {a.arg for a in args.posonlyargs + args.args + args.kwonlyargs}
    out |= {a.arg for a in (args.vararg, args.kwarg) if a is not None}
    out |= {n.id for n in ast.walk(f) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    globals_ = {name for n in ast.walk(f) if isinstance(n, ast.Global) for name in n.names}
    return out - globals_


def _global_users(s: _Script, name: str) -> list[Function]:
    """Module-level functions that use the module's `name` (not a local of their own)."""
    return [f for f in s.tree.body if isinstance(f, (ast.FunctionDef, ast.AsyncFunctionDef)) and name not in _locals(f)
            and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(f))]


def _common_block(s: _Script, scope: ScopeNode, a: ast.stmt, b: ast.stmt) -> tuple[ast.stmt, ast.stmt]:
    """The statements holding a and b that share the innermost statement list within scope."""
    def chain(stmt: Optional[ast.stmt]) -> list[tuple[ast.stmt, int]]:
        out = []
        while stmt is not None and stmt is not scope:
            out.append((stmt, id(s.block_of(stmt)[0])))
            parent = s.parents.get(stmt)
            stmt = s.enclosing_stmt(parent) if parent is not None and parent is not scope else None
        return out

    holders = {block: stmt for stmt, block in chain(a)}
    for stmt, block in chain(b):
        if block in holders:
            return holders[block], stmt
    raise ValueError("statements of one scope share its body")


def _training_loader(s: _Script, named: dict[str, list[ast.Call]], loaders: list[ast.Call],
                     loader_var: Optional[str]) -> ast.Call:
    if loader_var is not None:
        if loader_var not in named:
            _refuse(s.rel, f"no `{loader_var} = DataLoader(...)` (loaders: {', '.join(sorted(named)) or 'none named'})")
        return named[loader_var][0]
    if not named:
        _refuse(s.rel, f"line {loaders[0].lineno}: the DataLoader is not assigned to a variable; assign the training "
                       "loader (`train_loader = DataLoader(...)`)")
    if len(named) == 1:
        return next(iter(named.values()))[0]
    trains = [n for n in named if "train" in n.lower()]
    if len(trains) != 1:
        shuffled = [n for n, cs in named.items() if any(
            k.arg == "shuffle" and not (isinstance(k.value, ast.Constant) and not k.value.value)
            for c in cs for k in c.keywords)]
        trains = shuffled if len(shuffled) == 1 else trains
    if len(trains) != 1:
        _refuse(s.rel, f"several DataLoaders ({', '.join(sorted(named))}); name the training one with --loader-var")
    return named[trains[0]][0]


NOT_TRAINING = ("len", "print", "str", "repr", "type", "id", "isinstance")  # calls that only look at a loader


def _uses(s: _Script, scope: ScopeNode, loader_name: str) -> list[Site]:
    """Where training uses the loader in scope: loops over it (directly or wrapped), and calls it is passed
    to outside such loops (`train(model, train_loader)`), except calls that only look at it (`len`)."""
    def mentions(node: ast.AST) -> bool:
        return isinstance(node, ast.Name) and node.id == loader_name

    nodes = list(s.in_scope(scope))
    loops = [n for n in nodes if isinstance(n, (ast.For, ast.AsyncFor)) and any(map(mentions, ast.walk(n.iter)))]
    # a module-level loader iterated inside a function (`def train(epoch): for x in train_loader`)
    trainers: set[str] = set()
    if isinstance(scope, ast.Module):
        trainers = {f.name for f in _global_users(s, loader_name) if any(
            isinstance(n, (ast.For, ast.AsyncFor)) and any(map(mentions, ast.walk(n.iter))) for n in ast.walk(f))}
    out: list[Site] = list(loops)
    for node in nodes:
        if not isinstance(node, ast.Call) or _inside(s, node, loops):
            continue
        passed = any(map(mentions, [*node.args, *(k.value for k in node.keywords)]))
        if (passed and s.qualname(node.func) not in NOT_TRAINING) or (
                isinstance(node.func, ast.Name) and node.func.id in trainers):
            out.append(node)
    return out


def _inside(s: _Script, node: ast.AST, ancestors: Collection[ast.AST]) -> bool:
    up = s.parents.get(node)
    while up is not None:
        if up in ancestors:
            return True
        up = s.parents.get(up)
    return False


def _epoch_loop(s: _Script, scope: ScopeNode, site: Site) -> Optional[Loop]:
    """The loop around a use of the loader (the epoch loop), within scope."""
    node = s.parents.get(site)
    while node is not None and node is not scope:
        if isinstance(node, (ast.For, ast.AsyncFor, ast.While)):
            return node
        node = s.parents.get(node)
    return None


def _module_attributes(s: _Script, call: ast.Call, model_var: str) -> set[str]:
    """Attributes of the wrapped model that a function of this file, called with it, uses on its parameter
    (DDP has only forward/train/eval & co.); unknown functions are not guessed about."""
    if not isinstance(call.func, ast.Name):
        return set()
    defs = [n for n in s.tree.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.name == call.func.id]
    if len(defs) != 1:
        return set()
    params = [a.arg for a in defs[0].args.posonlyargs + defs[0].args.args]
    names: set[Optional[str]] = {params[i] for i, a in enumerate(call.args) if i < len(params) and isinstance(a, ast.Name)
             and a.id == model_var}
    names |= {k.arg for k in call.keywords if isinstance(k.value, ast.Name) and k.value.id == model_var}
    return {n.attr for n in ast.walk(defs[0]) if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
            and n.value.id in names and n.attr not in DDP_KEEPS}


def _module_alias(s: _Script, module: str) -> Optional[str]:
    for b in s.ctx.all_bindings():
        if b.scope is None and not b.typing_only and b.qualname == module and b.kind in ("package", "module", "from"):
            return b.local
    return None


def _is_logging(s: _Script, call: ast.Call) -> bool:
    f = call.func
    if not (isinstance(f, ast.Attribute) and f.attr in LOGGING_METHODS):
        return False
    base = f.value
    if isinstance(base, ast.Name):
        return bool(LOGGER_NAMES.match(base.id))
    return isinstance(base, ast.Attribute) and bool(LOGGER_NAMES.match(base.attr))


def _after_imports(s: _Script) -> int:
    """Line before which the set-up goes: after the last import of the module's leading imports."""
    body = s.tree.body
    last: Optional[ast.stmt] = None
    for st in body:
        if isinstance(st, (ast.Import, ast.ImportFrom)):
            last = st
        elif isinstance(st, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.For, ast.While, ast.With,
                             ast.If, ast.Try)):
            break
        elif last is None and isinstance(st, ast.Expr) and isinstance(st.value, ast.Constant):
            last = st  # the module docstring
    if last is None:
        return 1
    return cast(int, last.end_lineno) + 1   # set on every parsed node


def _runs(s: _Script, stmts: Sequence[ast.stmt]) -> list[list[ast.stmt]]:
    """Statements grouped into runs of neighbours in one block (they share one guard); a statement that
    does not start its line, or holds a multi-line string, is a run of its own."""
    def alone(st: ast.stmt) -> bool:
        return not s.starts_line(st) or any(isinstance(n, (ast.Constant, ast.JoinedStr))
                                            and cast(int, n.end_lineno) > n.lineno   # set on every parsed node
                                            for n in ast.walk(st))

    runs: list[list[ast.stmt]] = []
    previous: Optional[tuple[list[ast.stmt], int]] = None
    for st in sorted(stmts, key=lambda n: (n.lineno, n.col_offset)):
        block, index = s.block_of(st)
        if previous is not None and previous[0] is block and previous[1] == index - 1 and not alone(st) \
                and not alone(runs[-1][-1]):
            runs[-1].append(st)
        else:
            runs.append([st])
        previous = (block, index)
    return runs


def _guard(s: _Script, run: list[ast.stmt], cond: str) -> None:
    """`if cond:` around a run of statements (indented), or before a single one on its line."""
    ctx, first, last = s.ctx, run[0], run[-1]
    if not s.starts_line(first):
        ctx.report(first, codes.TP964, ADVICE, f"runs on every process; guard it with `if {cond}:`",
                   category=CATEGORY)
        return
    ind = s.indent(first)
    step = "\t" if "\t" in ind else "    "
    start = ctx.offset(first.lineno, first.col_offset)
    shown = f"if {cond}: " + "; ".join(ctx.text(st).splitlines()[0] for st in run)
    if len(run) == 1 and any(isinstance(n, (ast.Constant, ast.JoinedStr)) and cast(int, n.end_lineno) > n.lineno
                             for n in ast.walk(first)):  # indenting would change the string: one line
        ctx.insert(start, f"if {cond}: ", codes.TP964, "once, not once per process", shown=shown)
        return
    ctx.insert(start, f"if {cond}:{s.newline}{ind}{step}", codes.TP964, "once, not once per process", shown=shown)
    for line in range(first.lineno + 1, cast(int, last.end_lineno) + 1):
        begin = s.line_start(line)
        end = s.line_start(line + 1) if line < len(ctx.line_starts) else len(s.text)
        if s.text[begin:end].strip():
            ctx.insert(begin, step, codes.TP964, quiet=True)


def launcher(main_rel: str, target: Target) -> str:
    """run_distributed.sh: torchrun with one process per device of the target."""
    ns = target.namespace
    imports = "import torch" + (f", {target.register}" if target.register else "")
    count = f"{ns}.device_count()"
    return f"""#!/usr/bin/env bash
# Start {main_rel} on this machine with one process per {target.title} device (torchrun).
# Written by `torchport convert --distributed --to {target.name}`.
# Usage: bash run_distributed.sh [-n PROCESSES] [arguments for {main_rel}]
# The number of processes: -n, else $NPROC_PER_NODE, else the device count {ns} reports.
set -euo pipefail
here="$(cd "$(dirname "${{BASH_SOURCE[0]}}")" && pwd)"
nproc="${{NPROC_PER_NODE:-}}"
if [ "${{1:-}}" = "-n" ]; then nproc="$2"; shift 2; fi
if [ -z "$nproc" ]; then
  nproc="$("${{PYTHON:-python}}" -c '{imports}; print({count})')"
fi
exec "${{PYTHON:-python}}" -m torch.distributed.run --standalone --nproc_per_node "$nproc" "$here/{main_rel}" "$@"
"""


def line_map(old: str, new: str) -> list[int]:
    """For each line of `new` (index 0 = line 1), the line of `old` it comes from or follows."""
    import difflib

    a, b = old.splitlines(), new.splitlines()
    out = [1] * len(b)
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        for k in range(j1, j2):
            if tag == "equal":
                out[k] = i1 + (k - j1) + 1
            elif tag == "replace":
                out[k] = min(i1 + (k - j1), i2 - 1) + 1
            else:  # inserted lines belong to the line they precede
                out[k] = min(i1 + 1, max(len(a), 1))
    return out
