"""Device strings: "cuda", "cuda:0", "cuda:{}".format(r), f"cuda:{r}", "cuda:%d" % r.

Only strings in device positions change: arguments of `torch.device`, `.to()`,
`device=`-like keywords, defaults of device parameters, assignments to device
variables, comparisons with `x.device.type`, the index templates whose only
meaning is a device, and device choices ("cuda" beside "cpu" in a list; a
`pytest.param` or a comparison beside a question about the device).  Other
exact device strings are reported for review; log messages, docstrings and
other text are never touched.
"""
from __future__ import annotations

import ast
import re
import string
from functools import lru_cache
from typing import TYPE_CHECKING, Optional, Union, cast

from ...backends import device_types
from ...core import codes
from ...core.finding import ADVICE
from ...kb import cuda_defaults
from .. import groups
from ..checkers import checker
from ..flow import Function, ScopeNode, dotted, lookups, loop_slot, reads, scope_of, sources, use_site
from .api import device_argument, in_branch_of, in_fstring

if TYPE_CHECKING:
    from collections.abc import Sequence

    from ...core.codes import Code
    from ..context import FileContext

# "cuda", "cuda:0", index templates "cuda:{}", "cuda:{0}", "cuda:{rank}", "cuda:%d", "cuda:%s",
# and the bare prefix "cuda:" ("cuda:" + str(rank), device.replace("cuda:", ""))
DEVICE_STRING = re.compile(r"cuda(?::(?:\d+|\{[^{}]*\}|%[ds])?)?\Z")
PLAIN_DEVICE = re.compile(r"cuda(?::\d+)?\Z")
# names of variables, parameters, keywords and options that hold a device
DEVICE_NAME = re.compile(r"(?:^|_)(?:device|devices|dev|map_location|loc|location)(?:_type|_str|_name|_map)?$",
                         re.IGNORECASE)
# device types torch knows besides the targets' (the targets' own come from their files: other_devices())
TORCH_DEVICES = frozenset({"cpu", "cuda", "meta", "hpu", "xla", "mps", "xpu"})


@lru_cache(maxsize=1)
def other_devices() -> frozenset[str]:
    """Device type words: torch's and every bundled target's (read once, when a rule first needs them)."""
    return TORCH_DEVICES | device_types()
# callee -> (positional index, keyword) of its device argument
DEVICE_CALLS = {
    "torch.device": (0, "type"),
    "torch.set_default_device": (0, "device"),
    "torch.autocast": (0, "device_type"),
    "torch.amp.autocast": (0, "device_type"),
    "torch.get_device_module": (0, "device"),
    "torch.Stream": (0, "device"),
    "torch.Event": (0, "device"),
    "torch.Generator": (0, "device"),
}
PATH_CALLS = {"join", "Path", "PurePath", "joinpath"}
# str methods whose result is the same kind of string, and those that search a string for another
SAME_STRING = ("lower", "upper", "strip", "lstrip", "rstrip", "casefold")
STRING_QUERIES = ("replace", "startswith", "endswith", "split", "rsplit", "partition", "rpartition",
                  "removeprefix", "removesuffix", "find", "rfind", "index", "rindex", "count")
DEVICE, QUERY = "device", "query"  # how a position uses a device value (device_slot)
_QUOTE = re.compile(r"([rRuUbBfF]*)('''|\"\"\"|'|\")")
_NAMED_FIELD = re.compile(r"\{[^}]")  # a format field other than `{}`


def param_defaults(fn: Function) -> list[tuple[ast.arg, ast.expr]]:
    """[(ast.arg, default expression)] of a function or lambda."""
    args = fn.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    return pairs + [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]


def last_name(node: Optional[ast.AST]) -> str:
    """`self.args.device` -> 'device'; `device` -> 'device'; 'device' (a string key) -> 'device'."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    return ""


def option_name(call: ast.Call) -> str:
    """`parser.add_argument("--dist-backend", ...)` -> 'dist_backend' ('' when not add_argument)."""
    func = call.func
    if not (isinstance(func, ast.Attribute) and func.attr == "add_argument"):
        return ""
    names = [a.value for a in call.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
    dest = next((k.value.value for k in call.keywords if k.arg == "dest" and isinstance(k.value, ast.Constant)), None)
    longest = max(names, key=len, default="")
    return str(dest or longest.lstrip("-").replace("-", "_"))


def _literal_parts(ctx: FileContext, node: ast.expr) -> Optional[tuple[int, str, str]]:
    """(start of the string's content, prefix, quote) of a single string literal, or None."""
    start, end = ctx.span(node)
    m = _QUOTE.match(ctx.source, start)
    if not m:
        return None
    return m.end(), m.group(1), m.group(2)


def _rewrite_literal(ctx: FileContext, node: ast.expr, r: Code, template: str = "") -> bool:
    """Rewrite the leading 'cuda' of a string literal; `template` says how it is used."""
    parts = _literal_parts(ctx, node)
    if parts is None:
        return False
    content, prefix, quote = parts
    if ctx.source[content:content + 4] != "cuda":
        return False  # implicit concatenation or escapes: not ours to guess
    t = ctx.target
    if t.device:
        old = ctx.text(node)
        new = old[:content - ctx.span(node)[0]] + t.device + old[content - ctx.span(node)[0] + 4:]
        ctx.replace((content, content + 4), t.device, r, shown=(old, new))
        return True
    expr = t.device_expr.format(torch=ctx.torch_name(node.lineno))
    value = node.value if isinstance(node, ast.Constant) else None
    if value == "cuda" and not template:
        ctx.replace(node, expr, r)
    elif template == "format":
        return False  # needs the call too; see _rewrite_format
    elif template == "fstring" or "f" in prefix.lower():
        ctx.replace((content, content + 4), "{" + in_fstring(expr, quote) + "}", r)
    else:
        start, end = ctx.span(node)
        rest = ctx.source[content + 4:end]
        if "{" in rest or "}" in rest:
            return False
        new_prefix = prefix.replace("u", "").replace("U", "") + "f"
        ctx.replace((start, end), f"{new_prefix}{quote}{{{in_fstring(expr, quote)}}}{rest}", r)
    return True


def _rewrite_format(ctx: FileContext, call: ast.Call, r: Code) -> bool:
    receiver = cast(ast.Constant, cast(ast.Attribute, call.func).value)   # _rewrite_leaf's "cuda...".format(...)
    if ctx.target.device:
        return _rewrite_literal(ctx, receiver, r, "format")
    parts = _literal_parts(ctx, receiver)
    template = cast(str, receiver.value)   # a string: _rewrite_leaf matched it
    if parts is None or "{}" not in template or _NAMED_FIELD.search(template):
        return False
    content = parts[0]
    if ctx.source[content:content + 4] != "cuda":
        return False
    expr = ctx.target.device_expr.format(torch=ctx.torch_name(call.lineno))
    ctx.replace((content, content + 4), "{}", r, quiet=True)
    ctx.add_argument(call, expr, r, quiet=True, first=True)
    ctx.note_change(call, r)
    return True


def _without_index(ctx: FileContext, node: ast.expr, template: Optional[ast.expr], r: Code) -> bool:
    """Targets addressed without an index (cpu): `"cuda:1"`, `f"cuda:{r}"` -> `"cpu"`."""
    if template is None:
        return False
    ctx.handled.add(id(template))
    quote = '"' if ctx.text(template).lstrip("rRuUbBfF")[:1] != "'" else "'"
    ctx.replace(node, f"{quote}{ctx.target.device}{quote}", r,
                f"device index dropped: {ctx.target.name} has no device indexes")
    return True


def _indexed_template(node: ast.AST) -> Optional[ast.expr]:
    """The string literal of an indexed device expression ("cuda:0", "cuda:{}".format(i), ...), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("cuda:") \
            and DEVICE_STRING.match(node.value):
        return node
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
            and node.values[0].value == "cuda:":
        return node
    inner = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "format" else node.left if isinstance(node, ast.BinOp) \
        and isinstance(node.op, (ast.Mod, ast.Add)) else None
    if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.startswith("cuda:") \
            and DEVICE_STRING.match(inner.value):
        return inner
    return None


def rewrite_device(ctx: FileContext, node: Optional[ast.expr], r: Code) -> bool:
    """Rewrite the device strings an expression can take its value from (through local names,
    conditionals, `or`, sequences and dict lookups); returns whether there was one."""
    done = False
    for leaf in sources(ctx.parents(), node):
        done = _rewrite_leaf(ctx, leaf, r) or done
    return done


def _rewrite_leaf(ctx: FileContext, node: Optional[ast.expr], r: Code) -> bool:
    if node is None or id(node) in ctx.handled:
        return False
    ctx.handled.add(id(node))
    if not ctx.target.device_index and _without_index(ctx, node, _indexed_template(node), r):
        return True
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(DEVICE_STRING.match(node.value)) and _rewrite_literal(ctx, node, r)
    if isinstance(node, ast.JoinedStr):
        head = node.values[0] if node.values else None
        if isinstance(head, ast.Constant) and isinstance(head.value, str) and \
                (head.value == "cuda:" or head.value == "cuda" and len(node.values) == 1):
            return _rewrite_literal(ctx, node, r, "fstring")
        return False
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format":
        receiver = node.func.value
        if isinstance(receiver, ast.Constant) and isinstance(receiver.value, str) \
                and DEVICE_STRING.match(receiver.value):
            ctx.handled.add(id(receiver))
            return _rewrite_format(ctx, node, r)
        return False
    if isinstance(node, ast.BinOp) and isinstance(node.op, (ast.Mod, ast.Add)):
        left = node.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str) and DEVICE_STRING.match(left.value) \
                and (isinstance(node.op, ast.Mod) or left.value == "cuda:"):
            ctx.handled.add(id(left))
            return _rewrite_literal(ctx, left, r, "percent" if isinstance(node.op, ast.Mod) else "")
        return False
    return False


def holds_device_string(node: ast.AST) -> bool:
    """Would rewrite_device change this expression?"""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(DEVICE_STRING.match(node.value))
    if isinstance(node, ast.IfExp):
        return holds_device_string(node.body) or holds_device_string(node.orelse)
    return _indexed_template(node) is not None


def is_device_valued(node: ast.AST) -> bool:
    """Does this expression hold a device or a device type (x.device.type, device, str(device),
    device.lower(), device.split(":")[0])?"""
    if isinstance(node, ast.Attribute) and node.attr == "type":
        inner = node.value
        return bool(DEVICE_NAME.search(last_name(inner))) or isinstance(inner, ast.Call)
    if isinstance(node, (ast.Name, ast.Attribute)):
        return bool(DEVICE_NAME.search(last_name(node)))
    if isinstance(node, ast.Subscript):
        whole = node.value
        if isinstance(whole, ast.Call) and isinstance(whole.func, ast.Attribute) \
                and whole.func.attr in ("split", "rsplit", "partition", "rpartition"):
            return is_device_valued(whole.func.value)
        return bool(DEVICE_NAME.search(last_name(node)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return is_device_valued(node.args[0])
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in SAME_STRING:
        return is_device_valued(node.func.value)
    return False


def lookup_default(call: ast.Call) -> Optional[ast.expr]:
    """The default of a lookup by a device-named key: `getattr(args, "device", D)`,
    `cfg.get("device", D)`, `kwargs.pop("device", D)`, `os.environ.get("DEVICE", D)` -> D (else None)."""
    func = call.func
    if isinstance(func, ast.Name) and func.id == "getattr" and len(call.args) == 3:
        key, default = call.args[1], call.args[2]
    elif isinstance(func, ast.Attribute) and func.attr in ("get", "pop", "setdefault", "getenv") and len(call.args) == 2:
        key, default = call.args
    else:
        return None
    named = isinstance(key, ast.Constant) and isinstance(key.value, str) and DEVICE_NAME.search(key.value)
    return default if named else None


PARTIALS = {"functools.partial"}   # partial(torch.autocast, "cuda", ...): the wrapped callable's arguments, shifted


def device_spec(ctx: FileContext, call: ast.Call) -> Optional[tuple[int, str]]:
    """(positional index, keyword) of a call's device argument, or None."""
    if call.args and ctx.qualname(call.func) in PARTIALS and not isinstance(call.args[0], ast.Starred):
        inner = device_spec(ctx, ast.Call(func=call.args[0], args=[], keywords=[]))
        return (inner[0] + 1, inner[1]) if inner else None
    q = ctx.qualname(call.func)
    spec = DEVICE_CALLS.get(q) if q else None
    default = cuda_defaults().get(q) if spec is None and q else None
    if default is not None and ctx.target.name not in default.skip:   # torch.amp.GradScaler's device
        spec = (default.position, default.keyword)
    if spec is None and q and q.startswith("torch.cuda."):
        spec = (0, "device")
    if spec is None and isinstance(call.func, ast.Attribute) and call.func.attr == "to" and q is None:
        spec = (0, "device")
    if spec is None and ctx.device_params:   # a callable of another file of the project (converter/project.py)
        spec = ctx.device_params.get(dotted(call.func) or "")
    return spec


def device_slot(ctx: FileContext, expr: ast.AST) -> str:
    """DEVICE where `expr`'s value is used as a device, QUERY where it is compared with or searched
    in a device value, "" elsewhere (see flow.use_site for what it looks through)."""
    parents = ctx.parents()
    child, parent = use_site(parents, expr)
    looped = loop_slot(parents, child, parent, lambda use: device_slot(ctx, use), (DEVICE, QUERY))
    if looped is not None:
        return looped
    if isinstance(parent, ast.keyword):
        call = parents.get(id(parent))
        if not isinstance(call, ast.Call):   # a class statement's keyword (`class A(Base, device=d)`): its name
            return DEVICE if parent.arg and DEVICE_NAME.search(parent.arg) else ""
        spec = device_spec(ctx, call)
        option = option_name(call)
        if parent.arg and DEVICE_NAME.search(parent.arg) or spec and parent.arg == spec[1] \
                or option and DEVICE_NAME.search(option) and parent.arg in ("default", "choices", "const"):
            return DEVICE
        return ""
    if isinstance(parent, ast.Call):
        spec = device_spec(ctx, parent)
        if spec and len(parent.args) > spec[0] and parent.args[spec[0]] is child or lookup_default(parent) is child:
            return DEVICE
        func = parent.func
        if isinstance(func, ast.Attribute) and func.attr in STRING_QUERIES and parent.args and parent.args[0] is child \
                and is_device_valued(func.value):
            return QUERY
        return ""
    if isinstance(parent, ast.Compare):
        operands = [parent.left, *parent.comparators]
        i = next(k for k, o in enumerate(operands) if o is child)
        return QUERY if any(is_device_valued(o) for o in operands[max(0, i - 1):i] + operands[i + 1:i + 2]) else ""
    if isinstance(parent, (ast.Assign, ast.AnnAssign)) and parent.value is child:
        targets = parent.targets if isinstance(parent, ast.Assign) else [parent.target]
        return DEVICE if any(DEVICE_NAME.search(last_name(t)) for t in targets) else ""
    if isinstance(parent, ast.Dict):
        keys = [k for k, v in zip(parent.keys, parent.values) if v is child]
        return DEVICE if keys and DEVICE_NAME.search(last_name(keys[0])) else ""
    if isinstance(parent, ast.Return):
        fn = scope_of(parents, parent)
        return DEVICE if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)) and DEVICE_NAME.search(fn.name) else ""
    return ""


def _beside_a_cpu_device(ctx: FileContext, call: ast.Call) -> bool:
    """Is `torch.device("cuda")` an element of a list, tuple or set that also holds the CPU
    (`devices = [torch.device("cpu"), torch.device("cuda")]`, torchsde's tests)?"""
    literal = ctx.parents().get(id(call))
    if not isinstance(literal, (ast.List, ast.Tuple, ast.Set)):
        return False

    def cpu(e: ast.expr) -> bool:
        value = e.args[0] if isinstance(e, ast.Call) and ctx.qualname(e.func) == "torch.device" and e.args else e
        return isinstance(value, ast.Constant) and value.value == "cpu"
    return any(cpu(e) for e in literal.elts if e is not call)


@checker(codes.TP201, nodes=(ast.Call,), triggers=("cuda",))
def device_arguments(node: ast.Call, ctx: FileContext) -> None:
    r = codes.TP201
    if ctx.target.host and ctx.qualname(node.func) == "torch.device" and node.args \
            and holds_device_string(node.args[0]) and _beside_a_cpu_device(ctx, node):
        ctx.handled.add(id(node.args[0]))   # on the CPU the list would hold the CPU twice, and a guard
        ctx.report(node, codes.TP206, ADVICE,   # `device == gpu and not torch.cuda.is_available()` skip both
                   "kept: a CUDA device beside the CPU in one list (the CPU would be there twice, and the "
                   "project's CUDA guard would skip the CPU's half too); CPU torch has no CUDA device")
        return
    spec = device_spec(ctx, node)
    if spec is not None:
        pos, keyword = spec
        if len(node.args) > pos and not isinstance(node.args[pos], ast.Starred):
            rewrite_device(ctx, node.args[pos], r)
        for k in node.keywords:
            if k.arg == keyword:
                rewrite_device(ctx, k.value, r)
    for k in node.keywords:
        if k.arg and DEVICE_NAME.search(k.arg):
            if k.arg == "map_location" and not ctx.target.device and isinstance(k.value, ast.Constant) \
                    and isinstance(k.value.value, str) and PLAIN_DEVICE.match(k.value.value) and id(k.value) not in ctx.handled:
                # device-agnostic: the type alone ("cpu:0" where there is no accelerator is refused by torch.load)
                ctx.handled.add(id(k.value))
                ctx.replace(k.value, ctx.target.device_expr.format(torch=ctx.torch_name(k.value.lineno)), r,
                            "the device type alone: torch.load refuses 'cpu:0' where there is no accelerator")
            elif k.arg == "map_location" and isinstance(k.value, ast.Dict):
                ctx.handled.update(id(key) for key in k.value.keys)  # where the checkpoint was saved
                for v in k.value.values:
                    rewrite_device(ctx, v, r)
            else:
                rewrite_device(ctx, k.value, r)
    default = lookup_default(node)
    if default is not None:
        rewrite_device(ctx, default, r)
    if option_name(node) and DEVICE_NAME.search(option_name(node)):
        for k in node.keywords:
            if k.arg in ("default", "choices", "const"):
                rewrite_device(ctx, k.value, r)


# the names of the APIs whose device defaults to "cuda" (kb/cuda_names.toml [cuda_default]): `GradScaler`, ...
_CUDA_DEFAULT_WORDS = tuple(sorted({q.rsplit(".", 1)[-1].lower() for q in cuda_defaults()}))


@checker(codes.TP201, nodes=(ast.Call,), triggers=_CUDA_DEFAULT_WORDS)   # a file need not say "cuda" to use one
def cuda_default_device(node: ast.Call, ctx: FileContext) -> None:
    """A call of a torch API whose device parameter defaults to "cuda" that leaves it out: the target's device is
    passed (`GradScaler(enabled=True)` -> `GradScaler("npu", enabled=True)`), first where it is the first
    parameter and nothing is passed positionally, else by its keyword."""
    q = ctx.qualname(node.func)
    spec = cuda_defaults().get(q) if q else None
    if spec is None or ctx.target.name in spec.skip or len(node.args) > spec.position \
            or any(k.arg == spec.keyword for k in node.keywords):
        return
    device = device_argument(ctx)
    message = f"{spec.keyword} defaults to \"cuda\"" + (f": {spec.note}" if spec.note else "")
    if any(isinstance(a, ast.Starred) for a in node.args) or any(k.arg is None for k in node.keywords):
        ctx.report(node, codes.TP201, ADVICE, f"not converted: unpacked arguments; {message}, so pass "
                                              f"{spec.keyword}={device} unless they hold it")
        return
    root = node.func
    while isinstance(root, ast.Attribute):
        root = root.value
    binding = ctx.lookup(root.id, root.lineno) if isinstance(root, ast.Name) else None
    if binding is not None and binding.ambiguous:   # `except ImportError: from torch.cuda.amp import GradScaler`
        ctx.report(node, codes.TP201, ADVICE, f"not converted: '{binding.local}' is imported from different modules "
                                              f"in this file; {message}, so pass {spec.keyword}={device} where it "
                                              f"is {q}")
        return
    if spec.position == 0 and not node.args:
        ctx.add_argument(node, device, codes.TP201, message, first=True)
    else:
        ctx.add_argument(node, f"{spec.keyword}={device}", codes.TP201, message)


# the lines that can hold a bare device index: a literal digit right after `.to(`, `device=` or `device(`
_INDEX_TRIGGERS = tuple(f"{head}{d}" for head in (".to(", "device=", "device(") for d in "0123456789")


@checker(codes.TP201, nodes=(ast.Call,), triggers=_INDEX_TRIGGERS)   # a file need not say "cuda" to use one
def index_devices(node: ast.Call, ctx: FileContext) -> None:
    """A bare device index (`.to(0)`, `torch.zeros(2, device=0)`, `torch.device(0)`) means that device of the
    current accelerator; on a target without device indexes (cpu) there is none, and torch raises "Cannot
    access accelerator device when none is available".  Only a literal: a variable may hold a device string."""
    if ctx.target.device_index or not ctx.target.device:
        return
    q = ctx.qualname(node.func) or ""
    if q.startswith("torch.cuda."):
        return      # the torch.cuda rules decide the whole call (set_device(0) on the cpu target)
    spec = device_spec(ctx, node)
    values = [k.value for k in node.keywords if k.arg == "device" or spec and k.arg == spec[1]]
    if spec and len(node.args) > spec[0]:
        values.append(node.args[spec[0]])
    for value in values:   # device_arguments saw these too, and leaves an int alone
        if isinstance(value, ast.Constant) and type(value.value) is int:
            ctx.replace(value, f'"{ctx.target.device}"', codes.TP201,
                        f"a bare device index means the accelerator's device; {ctx.target.name} has none")


@checker(codes.TP202, nodes=(ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda), triggers=("cuda",))
def device_defaults(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, ctx: FileContext) -> None:
    for arg, default in param_defaults(node):
        if not DEVICE_NAME.search(arg.arg):
            continue
        if ctx.target.device:
            rewrite_device(ctx, default, codes.TP202)
        elif holds_device_string(default):  # an expression default would run at import time
            ctx.handled.add(id(default))
            ctx.report(default, codes.TP202, ADVICE,
                       "default left as is: an expression default runs when the module is imported; "
                       f"use None and pick {device_argument(ctx, default.lineno)} inside the function")


@checker(codes.TP203, nodes=(ast.Assign, ast.AnnAssign, ast.Dict), triggers=("cuda",))
def device_variables(node: ast.Assign | ast.AnnAssign | ast.Dict, ctx: FileContext) -> None:
    r = codes.TP203
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and DEVICE_NAME.search(key.value):
                rewrite_device(ctx, value, r)
        device_keys = [k for k in node.keys if isinstance(k, ast.Constant) and k.value == "cuda"]
        if device_keys and any(is_device_valued(k) for _, k in lookups(ctx.parents(), node)):
            for key in device_keys:  # a map by device type: {"cuda": "nccl", "npu": "hccl"}.get(device_type)
                if ctx.target.host:
                    ctx.handled.add(id(key))
                else:
                    rewrite_device(ctx, key, r)
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if node.value is not None and any(DEVICE_NAME.search(last_name(t)) for t in targets):
        rewrite_device(ctx, node.value, r)


@checker(codes.TP204, nodes=(ast.Compare, ast.Call), triggers=("cuda",))
def device_comparisons(node: ast.Compare | ast.Call, ctx: FileContext) -> None:
    if isinstance(node, ast.Call):
        func = node.func
        if not (isinstance(func, ast.Attribute) and func.attr in STRING_QUERIES and node.args
                and is_device_valued(func.value)):
            return
        others = [node.args[0]]
    else:
        operands = [node.left, *node.comparators]
        others = [right if is_device_valued(left) else left
                  for left, right in zip(operands, operands[1:]) if is_device_valued(left) or is_device_valued(right)]
    for other in others:
        if ctx.target.host or _lists_target(ctx, other):
            ctx.handled.update(id(n) for n in ast.walk(other))
        else:
            rewrite_device(ctx, other, codes.TP204)


def _lists_target(ctx: FileContext, other: ast.expr) -> bool:
    """Is `other` a list, tuple or set of device types that already names the target's (ultralytics'
    `device.type not in {"cpu", "cuda", "npu", "xpu"}` on npu)?  Its "cuda" is left: the test reads the same
    on the target, where rewriting it would list the target twice."""
    return bool(ctx.target.device) and isinstance(other, (ast.List, ast.Tuple, ast.Set)) and any(
        isinstance(e, ast.Constant) and other_device_type(e.value) == ctx.target.device for e in other.elts)


# Accelerator names that are no torch device type: a group that holds one names accelerators (Lightning's
# "gpu" and "tpu" beside "cuda"); "auto" is not one of them, as device options take it too (`--device auto`).
ACCELERATOR_NAMES = frozenset({"gpu", "tpu", "ipu"})


def _device_word(word: str) -> bool:
    """Is a string of a value group no sign of accelerator names (anything but ACCELERATOR_NAMES)?"""
    return word.lower() not in ACCELERATOR_NAMES


def value_role(ctx: FileContext, literal: ast.AST) -> str:
    """How the value group of a "cuda" literal uses it (converter/groups.py): "device", "name" (an accelerator or
    registry name: its group is never used as a device and holds words that are no device type) or ""."""
    return groups.role(ctx, literal, lambda read: device_slot(ctx, read) == DEVICE, _device_word,
                       lambda name: bool(DEVICE_NAME.search(name.removeprefix("self."))))


def keep_name(ctx: FileContext, literal: ast.AST) -> None:
    """Keep a "cuda" that names an accelerator, and say so (once per group: at its first such literal)."""
    ctx.handled.add(id(literal))
    g = groups.groups(ctx)
    said = ctx.memo.setdefault("accelerator names said", set())
    root = g.find(g.literals[id(literal)])
    if root in said:
        return
    said.add(root)
    literal = min((n for n in ast.walk(cast(ast.Module, ctx.tree)) if   # node rules run on a parsed tree
                    isinstance(n, ast.Constant) and isinstance(n.value, str)
                   and PLAIN_DEVICE.match(n.value) and id(n) in g.literals and g.find(g.literals[id(n)]) == root),
                  key=lambda n: (n.lineno, n.col_offset))   # said at the group's first "cuda"
    others = sorted(w for w in g.words_of(literal) if not _device_word(w))
    ctx.report(literal, codes.TP206, ADVICE,
               f"kept: here \"cuda\" names an accelerator, not a device (it goes with {', '.join(map(repr, others[:4]))} "
               f"and is never used as a device), so every \"cuda\" of its group stays; where the project maps it to "
               f"a CUDA device, map {device_argument(ctx, literal.lineno)} too")


def _device_choice(node: ast.IfExp) -> Union[bool, Optional[re.Match[str]]]:
    """`"cuda" if cond else "cpu"`: both branches device strings (truthy: True or a match)."""
    def device_like(e: ast.expr) -> Union[bool, Optional[re.Match[str]]]:
        return isinstance(e, ast.Constant) and isinstance(e.value, str) and \
            (DEVICE_STRING.match(e.value) or e.value.split(":")[0] in other_devices())
    return device_like(node.body) and device_like(node.orelse)


def _name_char(text: str) -> bool:
    """Is `text` (one character, or empty) a character of a name?"""
    return text.isalnum() or text == "_"


def name_part(ctx: FileContext, node: ast.AST) -> bool:
    """Is `node`'s string glued to more name characters, so that it builds another name, not a device
    (`f"{'cuda' if c else 'cpu'}_time_total"` is a profiler column, `"cuda" + "_mem"` a key)?"""
    parent = ctx.parents().get(id(node))
    if isinstance(parent, ast.FormattedValue) and parent.format_spec is None and parent.conversion == -1:
        node, parent = parent, ctx.parents().get(id(parent))
        if not isinstance(parent, ast.JoinedStr):
            return False
        i = next(k for k, v in enumerate(parent.values) if v is node)
        before = parent.values[i - 1] if i else None
        after = parent.values[i + 1] if i + 1 < len(parent.values) else None
    elif isinstance(parent, ast.BinOp) and isinstance(parent.op, ast.Add):
        before, after = (parent.left, None) if parent.right is node else (None, parent.right)
    elif isinstance(parent, ast.Call) and isinstance(parent.func, ast.Attribute) and parent.func.attr == "format" \
            and isinstance(parent.func.value, ast.Constant) and isinstance(parent.func.value.value, str) \
            and any(a is node for a in parent.args):   # "{}_time_total".format(...)
        return _format_field_glued(parent.func.value.value, next(i for i, a in enumerate(parent.args) if a is node))
    else:
        return False
    return (isinstance(after, ast.Constant) and isinstance(after.value, str) and _name_char(after.value[:1])
            or isinstance(before, ast.Constant) and isinstance(before.value, str) and _name_char(before.value[-1:]))


def _format_field_glued(template: str, index: int) -> bool:
    """Is the replacement field of positional argument `index` in a str.format template glued to name characters?"""
    try:
        parts = list(string.Formatter().parse(template))
    except ValueError:
        return False
    auto = 0
    for k, (literal, field, _, _) in enumerate(parts):
        if field is None:
            continue
        number = auto if field == "" else int(field) if field.isdigit() else -1
        auto += field == ""
        following = parts[k + 1][0] if k + 1 < len(parts) else ""
        if number == index and (_name_char(literal[-1:]) or _name_char(following[:1])):
            return True
    return False


@checker(codes.TP205, nodes=(ast.Call, ast.BinOp, ast.JoinedStr, ast.IfExp), triggers=("cuda",))
def device_templates(node: ast.Call | ast.BinOp | ast.JoinedStr | ast.IfExp, ctx: FileContext) -> None:
    r = codes.TP205
    if isinstance(node, ast.IfExp):
        if _device_choice(node) and name_part(ctx, node):   # a part of a longer name: kept, as every target reads it
            ctx.handled.update(id(n) for n in (node.body, node.orelse))
        elif _device_choice(node) and any(value_role(ctx, n) == "name" for n in (node.body, node.orelse)):
            ctx.handled.add(id(node.orelse if value_role(ctx, node.body) == "name" else node.body))
            keep_name(ctx, node.body if value_role(ctx, node.body) == "name" else node.orelse)
        elif _device_choice(node):
            rewrite_device(ctx, node, r)
        return
    if isinstance(node, ast.JoinedStr):
        if len(node.values) == 2 and isinstance(node.values[1], ast.FormattedValue):
            rewrite_device(ctx, node, r)
        return
    if isinstance(node, ast.Call):
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr == "format" and isinstance(func.value, ast.Constant) \
                and isinstance(func.value.value, str) and func.value.value.startswith("cuda:"):
            rewrite_device(ctx, node, r)
        return
    if isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) and (
            isinstance(node.op, ast.Mod) and node.left.value.startswith("cuda:")
            or isinstance(node.op, ast.Add) and node.left.value == "cuda:"):
        rewrite_device(ctx, node, r)


@checker(codes.TP207, nodes=(ast.Assign, ast.AnnAssign, ast.NamedExpr, ast.For, ast.AsyncFor), triggers=("cuda",))
def device_data_flow(
        node: ast.Assign | ast.AnnAssign | ast.NamedExpr | ast.For | ast.AsyncFor, ctx: FileContext) -> None:
    targets: list[ast.expr]
    bound: Sequence[Optional[ast.expr]]
    if isinstance(node, (ast.For, ast.AsyncFor)):
        targets = [node.target]
        bound = node.iter.elts if isinstance(node.iter, (ast.Tuple, ast.List, ast.Set)) else []
    else:
        targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        bound = [node.value]
    names = [t.id for t in targets if isinstance(t, ast.Name) and not DEVICE_NAME.search(t.id)]
    parents = ctx.parents()
    literals = [leaf for value in bound for leaf in sources(parents, value)
                if id(leaf) not in ctx.handled and holds_device_string(leaf)]
    if not names or not literals:
        return
    scope = cast(ScopeNode, scope_of(parents, node))   # a statement is inside a module at least
    slots = {device_slot(ctx, use) for name in names for use in reads(scope, name)}
    if DEVICE in slots or QUERY in slots and not ctx.target.host:
        for leaf in literals:
            rewrite_device(ctx, leaf, codes.TP207)
    elif QUERY in slots:
        ctx.handled.update(id(leaf) for leaf in literals)


CUDA_PRESENCE = {"torch.cuda.is_available", "torch.cuda.device_count", "torch.cuda.is_initialized"}


def asks_for_cuda(ctx: FileContext, test: ast.AST) -> bool:
    """Does an expression ask whether CUDA is there (is_available, device_count)?"""
    return any(isinstance(n, (ast.Attribute, ast.Name)) and ctx.qualname(n) in CUDA_PRESENCE for n in ast.walk(test))


def under_cuda_question(ctx: FileContext, node: ast.AST) -> bool:
    """Is `node` in a branch of an `if` that asks whether CUDA is there (within its function)?
    `if torch.cuda.is_available(): return "cuda"` (yolov5's select_device family)."""
    return in_branch_of(ctx, node, lambda test: asks_for_cuda(ctx, test))


DEVICE_WORD = re.compile(r"([a-z]+)(?::\d+)?\Z")
PARAMETERS = ("pytest.param",)  # a parametrize value with marks or an id: pytest.param(value, ..., marks=...)


def _choice_value(ctx: FileContext, element: ast.expr) -> ast.expr:
    """The value an element of a list of choices stands for: `pytest.param("cuda", marks=...)` -> its first
    argument."""
    if isinstance(element, ast.Call) and element.args and ctx.qualname(element.func) in PARAMETERS:
        return element.args[0]
    return element


def other_device_type(value: object) -> str:
    """The device type of a string of another device than CUDA ("cpu", "mps", "npu:0"), else ''."""
    m = DEVICE_WORD.match(value) if isinstance(value, str) else None
    return m.group(1) if m and m.group(1) != "cuda" and m.group(1) in other_devices() else ""


def _among_devices(ctx: FileContext, node: ast.AST, literal: Optional[ast.AST]) -> bool:
    """Is `node` an element (or pytest.param of one) of `literal`, another element of which is another device
    type's string, none of them the target's own (`["cpu", "mps", "cuda"]` on mps would hold "mps" twice)?"""
    if not isinstance(literal, (ast.List, ast.Tuple, ast.Set)):
        return False
    values = [_choice_value(ctx, e) for e in literal.elts]
    if not any(v is node for v in values):
        return False
    others = {other_device_type(v.value) for v in values if isinstance(v, ast.Constant)} - {""}
    return bool(others) and ctx.target.device not in others


def _path_parts(ctx: FileContext, literal: ast.AST) -> bool:
    """Is `literal` looped over by a variable that names a path component (`for sub in ("cpu", "cuda"):
    os.path.join(root, sub)`): folder names, not devices."""
    parents = ctx.parents()

    def in_path(use: ast.Name) -> str:
        call = parents.get(id(use))
        return "path" if isinstance(call, ast.Call) and \
            getattr(call.func, "attr", getattr(call.func, "id", "")) in PATH_CALLS else ""
    return loop_slot(parents, literal, parents.get(id(literal)), in_path, ("path",)) == "path"


def device_choice(ctx: FileContext, node: ast.Constant) -> bool:
    """Is a "cuda" string one of several device choices: an element of a list, tuple or set literal that also
    holds another device's string (`parametrize("device", ["cpu", "cuda"])`, `for d in ("cpu", "cuda")`,
    `choices=["cpu", "cuda"]`), the default of an add_argument with such choices, or a value of a
    `pytest.param` whose marks ask whether CUDA is there (`pytest.param("cuda", marks=skipif(not
    torch.cuda.is_available(), ...))`)?"""
    parents = ctx.parents()
    literal = parents.get(id(node))
    if isinstance(literal, ast.Call) and ctx.qualname(literal.func) in PARAMETERS and any(a is node for a in literal.args):
        if any(k.arg == "marks" and asks_for_cuda(ctx, k.value) for k in literal.keywords):
            return True
        literal = parents.get(id(literal))
    if _among_devices(ctx, node, literal):
        return not _path_parts(ctx, cast(ast.AST, literal))   # _among_devices: a list, tuple or set
    if not (isinstance(literal, ast.keyword) and literal.arg in ("default", "const")):
        return False
    # add_argument(..., choices=["cpu", "cuda"], default="cuda"); a class statement's keyword is no option
    call = parents.get(id(literal))
    if not isinstance(call, ast.Call):
        return False
    choices = next((k.value for k in call.keywords if k.arg == "choices"), None) if option_name(call) else None
    same = [v for v in (_choice_value(ctx, e) for e in getattr(choices, "elts", ()))
            if isinstance(v, ast.Constant) and v.value == node.value]
    return bool(same) and _among_devices(ctx, same[0], choices)


def asked_beside(ctx: FileContext, node: ast.AST) -> bool:
    """Is a "cuda" string compared in an `and`/`or` that also asks whether CUDA is there
    (`request.param == "cuda" and not torch.cuda.is_available()`): the question is rewritten, so is the answer."""
    parents = ctx.parents()
    compare = parents.get(id(node))
    if not (isinstance(compare, ast.Compare) and len(compare.ops) == 1
            and isinstance(compare.ops[0], (ast.Eq, ast.NotEq, ast.Is, ast.IsNot))):
        return False
    child: ast.expr = compare
    parent = parents.get(id(compare))
    while isinstance(parent, ast.UnaryOp) and isinstance(parent.op, ast.Not):
        child, parent = parent, parents.get(id(parent))
    return isinstance(parent, ast.BoolOp) and any(v is not child and asks_for_cuda(ctx, v) for v in parent.values)


@checker(codes.TP206, nodes=(ast.Constant,), triggers=("cuda",))
def other_device_strings(node: ast.Constant, ctx: FileContext) -> None:
    if id(node) in ctx.handled or not isinstance(node.value, str) or not PLAIN_DEVICE.match(node.value):
        return
    parent = ctx.parent
    if isinstance(parent, ast.Expr):
        return  # a bare string statement (docstring)
    if isinstance(parent, ast.Call) and getattr(parent.func, "attr", getattr(parent.func, "id", "")) in PATH_CALLS:
        return  # a path component: os.path.join("cuda", ...)
    if name_part(ctx, node):
        return  # a part of another name: "cuda" + "_time_total"
    role = value_role(ctx, node)
    if role == "name":
        keep_name(ctx, node)
        return
    if role == "device" and isinstance(parent, (ast.Assign, ast.AnnAssign, ast.IfExp, ast.BoolOp)) \
            and (not ctx.target.host or groups.exported(ctx, node)):
        rewrite_device(ctx, node, codes.TP207)   # bound to a variable its group (or another file) uses as a device
        return
    if under_cuda_question(ctx, node):
        # the question is rewritten, and its answer follows; on the host the question keeps its words (CPU torch
        # answers no) and the answer is the CPU too, as in `"cuda" if torch.cuda.is_available() else "cpu"` (TP205):
        # a cpu tree picks the CPU on a machine with CUDA as well
        rewrite_device(ctx, node, codes.TP207)
        return
    if not ctx.target.host and (device_choice(ctx, node) or asked_beside(ctx, node)):
        rewrite_device(ctx, node, codes.TP207)  # on the host a list of choices would hold "cpu" twice: reported
        return
    ctx.report(node, codes.TP206, ADVICE,
               f"device string in a position torchport does not treat as a device: check whether it should be {device_argument(ctx, node.lineno)}")


LOADS = {"torch.load", "torch.serialization.load"}
_COMMENT = re.compile(r"#[^\n]*")
_INDENT = re.compile(r"[ \t]*")


@checker(codes.TP211, nodes=(ast.Call,), triggers=("load",),
         needs=("torch.load", "from torch import load", "serialization.load", "serialization import load"))
def load_without_map_location(node: ast.Call, ctx: FileContext) -> None:
    if ctx.qualname(node.func) not in LOADS or len(node.args) != 1 or isinstance(node.args[0], ast.Starred) \
            or any(k.arg in (None, "map_location") for k in node.keywords):
        return
    last_end = ctx.span(node.keywords[-1] if node.keywords else node.args[0])[1]
    close = ctx.span(node)[1] - 1  # the call's `)`; between: a parenthesised argument's `)`, a comma, comments
    between = _COMMENT.sub(lambda m: " " * len(m.group()), ctx.source[last_end:close])
    message = "storages saved on a CUDA device would not load here; load_state_dict copies them onto the model's device"
    line_start = ctx.source.rfind("\n", 0, close) + 1
    if "\n" in between and not ctx.source[line_start:close].strip():  # `)` alone on its line: a line of its own
        arg_line = ctx.source.rfind("\n", 0, last_end) + 1
        indent = _INDENT.match(ctx.source, arg_line).group()  # type: ignore[union-attr]  # always matches
        if "," not in between:
            ctx.insert(last_end + len(between.rstrip()), ",", codes.TP211, quiet=True)
        ctx.insert(line_start, f'{indent}map_location="cpu",\n', codes.TP211, message, shown='map_location="cpu"',
                   anchor=last_end)
        return
    ctx.insert(close, (" " if "," in between else ", ") + 'map_location="cpu"', codes.TP211, message,
               shown='map_location="cpu"')
