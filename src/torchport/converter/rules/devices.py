"""Device strings: "cuda", "cuda:0", "cuda:{}".format(r), f"cuda:{r}", "cuda:%d" % r.

Only strings in device positions change: arguments of `torch.device`, `.to()`,
`device=`-like keywords, defaults of device parameters, assignments to device
variables, comparisons with `x.device.type`, and the index templates whose only
meaning is a device.  Other exact device strings are reported for review; log
messages, docstrings and other text are never touched.
"""
from __future__ import annotations

import ast
import re

from ...core.finding import ADVICE
from ..registry import rule
from .api import device_argument

# "cuda", "cuda:0", and index templates "cuda:{}", "cuda:{0}", "cuda:{rank}", "cuda:%d", "cuda:%s"
DEVICE_STRING = re.compile(r"cuda(?::(?:\d+|\{[^{}]*\}|%[ds]))?\Z")
PLAIN_DEVICE = re.compile(r"cuda(?::\d+)?\Z")
# names of variables, parameters, keywords and options that hold a device
DEVICE_NAME = re.compile(r"(?:^|_)(?:device|devices|dev|map_location|loc|location)(?:_type|_str|_name|_map)?$",
                         re.IGNORECASE)
OTHER_DEVICES = {"cpu", "mps", "xpu", "npu", "mlu", "musa", "meta", "hpu", "xla", "cuda"}
# callee -> (positional index, keyword) of its device argument
DEVICE_CALLS = {
    "torch.device": (0, "type"),
    "torch.set_default_device": (0, "device"),
    "torch.autocast": (0, "device_type"),
    "torch.amp.autocast": (0, "device_type"),
    "torch.amp.GradScaler": (0, "device"),
    "torch.get_device_module": (0, "device"),
    "torch.Stream": (0, "device"),
    "torch.Event": (0, "device"),
    "torch.Generator": (0, "device"),
}
PATH_CALLS = {"join", "Path", "PurePath", "joinpath"}
_QUOTE = re.compile(r"([rRuUbBfF]*)('''|\"\"\"|'|\")")


def param_defaults(fn) -> list:
    """[(ast.arg, default expression)] of a function or lambda."""
    args = fn.args
    positional = args.posonlyargs + args.args
    pairs = list(zip(positional[len(positional) - len(args.defaults):], args.defaults))
    return pairs + [(a, d) for a, d in zip(args.kwonlyargs, args.kw_defaults) if d is not None]


def last_name(node) -> str:
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


def _literal_parts(ctx, node):
    """(start of the string's content, prefix, quote) of a single string literal, or None."""
    start, end = ctx.span(node)
    m = _QUOTE.match(ctx.source, start)
    if not m:
        return None
    return m.end(), m.group(1), m.group(2)


def _rewrite_literal(ctx, node, r, template: str = "") -> bool:
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
    expr = t.device_expr.format(torch=ctx.torch_name())
    value = node.value if isinstance(node, ast.Constant) else None
    if value == "cuda" and not template:
        ctx.replace(node, expr, r)
    elif template == "format":
        return False  # needs the call too; see _rewrite_format
    elif template == "fstring" or "f" in prefix.lower():
        ctx.replace((content, content + 4), "{" + expr + "}", r)
    else:
        start, end = ctx.span(node)
        rest = ctx.source[content + 4:end]
        if "{" in rest or "}" in rest:
            return False
        new_prefix = prefix.replace("u", "").replace("U", "") + "f"
        ctx.replace((start, end), f"{new_prefix}{quote}{{{expr}}}{rest}", r)
    return True


def _rewrite_format(ctx, call, r) -> bool:
    receiver = call.func.value
    if ctx.target.device:
        return _rewrite_literal(ctx, receiver, r, "format")
    parts = _literal_parts(ctx, receiver)
    if parts is None or "{}" not in receiver.value or re.search(r"\{[^}]", receiver.value):
        return False
    content = parts[0]
    if ctx.source[content:content + 4] != "cuda":
        return False
    expr = ctx.target.device_expr.format(torch=ctx.torch_name())
    ctx.replace((content, content + 4), "{}", r)
    open_paren = ctx.source.index("(", ctx.span(call.func)[1])
    ctx.insert(open_paren + 1, expr + ", ", r, quiet=True)
    return True


def _without_index(ctx, node, template, r) -> bool:
    """Targets addressed without an index (cpu): `"cuda:1"`, `f"cuda:{r}"` -> `"cpu"`."""
    if template is None:
        return False
    ctx.handled.add(id(template))
    quote = '"' if ctx.text(template).lstrip("rRuUbBfF")[:1] != "'" else "'"
    ctx.replace(node, f"{quote}{ctx.target.device}{quote}", r,
                f"device index dropped: {ctx.target.name} has no device indexes")
    return True


def _indexed_template(node):
    """The string literal of an indexed device expression ("cuda:0", "cuda:{}".format(i), ...), or None."""
    if isinstance(node, ast.Constant) and isinstance(node.value, str) and node.value.startswith("cuda:") \
            and DEVICE_STRING.match(node.value):
        return node
    if isinstance(node, ast.JoinedStr) and node.values and isinstance(node.values[0], ast.Constant) \
            and node.values[0].value == "cuda:":
        return node
    inner = node.func.value if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
        and node.func.attr == "format" else node.left if isinstance(node, ast.BinOp) \
        and isinstance(node.op, ast.Mod) else None
    if isinstance(inner, ast.Constant) and isinstance(inner.value, str) and inner.value.startswith("cuda:") \
            and DEVICE_STRING.match(inner.value):
        return inner
    return None


def rewrite_device(ctx, node, r) -> bool:
    """Rewrite a device-valued expression; returns whether it held a CUDA device string."""
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
    if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod):
        left = node.left
        if isinstance(left, ast.Constant) and isinstance(left.value, str) and DEVICE_STRING.match(left.value):
            ctx.handled.add(id(left))
            return _rewrite_literal(ctx, left, r, "percent")
        return False
    if isinstance(node, ast.IfExp):
        a = rewrite_device(ctx, node.body, r)
        b = rewrite_device(ctx, node.orelse, r)
        return a or b
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return any([rewrite_device(ctx, e, r) for e in node.elts])
    return False


def holds_device_string(node) -> bool:
    """Would rewrite_device change this expression?"""
    if isinstance(node, ast.Constant):
        return isinstance(node.value, str) and bool(DEVICE_STRING.match(node.value))
    if isinstance(node, ast.IfExp):
        return holds_device_string(node.body) or holds_device_string(node.orelse)
    return _indexed_template(node) is not None


def is_device_valued(node) -> bool:
    """Does this expression hold a device or a device type (x.device.type, device, str(device))?"""
    if isinstance(node, ast.Attribute) and node.attr == "type":
        inner = node.value
        return bool(DEVICE_NAME.search(last_name(inner))) or isinstance(inner, ast.Call)
    if isinstance(node, (ast.Name, ast.Attribute, ast.Subscript)):
        return bool(DEVICE_NAME.search(last_name(node)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "str" and node.args:
        return is_device_valued(node.args[0])
    return False


@rule("TP201", "device-arguments", "device-string", nodes=(ast.Call,), triggers=("cuda",),
      example=('dev = torch.device("cuda", args.local_rank)\nx = x.to("cuda:0")\nckpt = torch.load(p, map_location="cuda:0")\n',
               'dev = torch.device("npu", args.local_rank)\nx = x.to("npu:0")\nckpt = torch.load(p, map_location="npu:0")\n'))
def device_arguments(node, ctx):
    """Device strings passed as devices: `torch.device(...)`, `.to(...)`, `device=`, `map_location=`.

    Also `torch.autocast("cuda")`, `torch.amp.GradScaler("cuda")`, `torch.set_default_device`,
    `torch.Generator(device=...)`, the first argument of `torch.cuda.*` calls, and any
    keyword named like a device (`device_type=`, `output_device=`, `pin_memory_device=`).
    In a `map_location` dict only the values change: the keys name where the
    checkpoint was saved.
    """
    r = device_arguments.rule
    q = ctx.qualname(node.func)
    spec = DEVICE_CALLS.get(q) if q else None
    if spec is None and q and q.startswith("torch.cuda."):
        spec = (0, "device")
    if spec is None and isinstance(node.func, ast.Attribute) and node.func.attr == "to" and q is None:
        spec = (0, "device")
    if spec is not None:
        pos, keyword = spec
        if len(node.args) > pos and not isinstance(node.args[pos], ast.Starred):
            rewrite_device(ctx, node.args[pos], r)
        for k in node.keywords:
            if k.arg == keyword:
                rewrite_device(ctx, k.value, r)
    for k in node.keywords:
        if k.arg and DEVICE_NAME.search(k.arg):
            if k.arg == "map_location" and isinstance(k.value, ast.Dict):
                ctx.handled.update(id(key) for key in k.value.keys)  # where the checkpoint was saved
                for v in k.value.values:
                    rewrite_device(ctx, v, r)
            else:
                rewrite_device(ctx, k.value, r)
    if option_name(node) and DEVICE_NAME.search(option_name(node)):
        for k in node.keywords:
            if k.arg in ("default", "choices", "const"):
                rewrite_device(ctx, k.value, r)


@rule("TP202", "device-defaults", "device-string", nodes=(ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda),
      triggers=("cuda",),
      example=('def pyobj2tensor(obj, device="cuda"):\n    pass\n', 'def pyobj2tensor(obj, device="npu"):\n    pass\n'))
def device_defaults(node, ctx):
    """Default values of parameters named like a device (`device="cuda"`, `map_location="cuda:0"`)."""
    for arg, default in param_defaults(node):
        if not DEVICE_NAME.search(arg.arg):
            continue
        if ctx.target.device:
            rewrite_device(ctx, default, device_defaults.rule)
        elif holds_device_string(default):  # an expression default would run at import time
            ctx.handled.add(id(default))
            ctx.report(default, device_defaults.rule, ADVICE,
                       "default left as is: an expression default runs when the module is imported; "
                       f"use None and pick {device_argument(ctx)} inside the function")


@rule("TP203", "device-variables", "device-string", nodes=(ast.Assign, ast.AnnAssign, ast.Dict),
      triggers=("cuda",),
      example=('self.device = "cuda:{}".format(self.local_rank)\ncfg = {"device": "cuda"}\n',
               'self.device = "npu:{}".format(self.local_rank)\ncfg = {"device": "npu"}\n'))
def device_variables(node, ctx):
    """Values assigned to device variables (`device = ...`, `self.device = ...`, `cfg["device"] = ...`, `{"device": ...}`)."""
    r = device_variables.rule
    if isinstance(node, ast.Dict):
        for key, value in zip(node.keys, node.values):
            if isinstance(key, ast.Constant) and isinstance(key.value, str) and DEVICE_NAME.search(key.value):
                rewrite_device(ctx, value, r)
        return
    targets = node.targets if isinstance(node, ast.Assign) else [node.target]
    if node.value is not None and any(DEVICE_NAME.search(last_name(t)) for t in targets):
        rewrite_device(ctx, node.value, r)


@rule("TP204", "device-comparisons", "device-string", nodes=(ast.Compare,), triggers=("cuda",),
      example=('if x.device.type == "cuda":\n    pass\n', 'if x.device.type == "npu":\n    pass\n'))
def device_comparisons(node, ctx):
    """Comparisons with device values: `x.device.type == "cuda"`, `"cuda" in str(device)`, `device in ("cuda", "cpu")`."""
    operands = [node.left, *node.comparators]
    for left, right in zip(operands, operands[1:]):
        if is_device_valued(left):
            rewrite_device(ctx, right, device_comparisons.rule)
        elif is_device_valued(right):
            rewrite_device(ctx, left, device_comparisons.rule)


def _device_choice(node) -> bool:
    """`"cuda" if cond else "cpu"`: both branches device strings."""
    def device_like(e):
        return isinstance(e, ast.Constant) and isinstance(e.value, str) and \
            (DEVICE_STRING.match(e.value) or e.value.split(":")[0] in OTHER_DEVICES)
    return device_like(node.body) and device_like(node.orelse)


@rule("TP205", "device-templates", "device-string", nodes=(ast.Call, ast.BinOp, ast.JoinedStr, ast.IfExp),
      triggers=("cuda",),
      example=('loc = "cuda:{}".format(rank)\nd = f"cuda:{rank}"\ne = "cuda:%d" % rank\nf = "cuda" if ok else "cpu"\n',
               'loc = "npu:{}".format(rank)\nd = f"npu:{rank}"\ne = "npu:%d" % rank\nf = "npu" if ok else "cpu"\n'))
def device_templates(node, ctx):
    """Expressions that can only mean a device, wherever they appear.

    `"cuda:{}".format(r)`, `f"cuda:{r}"`, `"cuda:%d" % r` (exactly these shapes, no
    other text) and `"cuda" if ... else "cpu"`.
    """
    r = device_templates.rule
    if isinstance(node, ast.IfExp):
        if _device_choice(node):
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
    if isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant) and isinstance(node.left.value, str) \
            and node.left.value.startswith("cuda:"):
        rewrite_device(ctx, node, r)


@rule("TP206", "device-strings-elsewhere", "device-string", nodes=(ast.Constant,), triggers=("cuda",))
def other_device_strings(node, ctx):
    """Exact device strings ("cuda", "cuda:1") outside a known device position: reported, not changed."""
    if id(node) in ctx.handled or not isinstance(node.value, str) or not PLAIN_DEVICE.match(node.value):
        return
    parent = ctx.parent
    if isinstance(parent, ast.Expr):
        return  # a bare string statement (docstring)
    if isinstance(parent, ast.Call) and getattr(parent.func, "attr", getattr(parent.func, "id", "")) in PATH_CALLS:
        return  # a path component: os.path.join("cuda", ...)
    ctx.report(node, other_device_strings.rule, ADVICE,
               f"device string in a position torchport does not treat as a device: check whether it should be {device_argument(ctx)}")
